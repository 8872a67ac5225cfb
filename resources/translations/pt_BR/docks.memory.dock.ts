<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.memory_dock</name>
    <message>
        <source>Whose shape fills the formula: the model on screen, the bundled tiny model, or a real model&apos;s preset.</source>
        <translation>De quem é a forma que preenche a fórmula: o modelo na tela, o modelo tiny incluído ou o preset de um modelo real.</translation>
    </message>
    <message>
        <source>the model on screen</source>
        <translation>o modelo na tela</translation>
    </message>
    <message>
        <source>tiny (bundled)</source>
        <translation>tiny (incluído)</translation>
    </message>
    <message>
        <source>follow the run</source>
        <translation>seguir a execução</translation>
    </message>
    <message>
        <source>Keep the terms equal to the run on screen: its shape, its bits, and n at the cursor&apos;s step.</source>
        <translation>Manter os termos iguais aos da execução na tela: sua forma, seus bits e n no passo do cursor.</translation>
    </message>
    <message>
        <source>model</source>
        <translation>modelo</translation>
    </message>
    <message>
        <source>The model&apos;s weights at each precision: parameters × bytes per parameter.</source>
        <translation>Os pesos do modelo em cada precisão: parâmetros × bytes por parâmetro.</translation>
    </message>
    <message>
        <source>A model is trained for a maximum context; past it, its outputs are not to be trusted.</source>
        <translation>Um modelo é treinado para um contexto máximo; além dele, suas saídas não são confiáveis.</translation>
    </message>
    <message>
        <source>The plot&apos;s model: its weights and its MHA / GQA / MQA curves are drawn.</source>
        <translation>O modelo do gráfico: seus pesos e suas curvas MHA / GQA / MQA são desenhados.</translation>
    </message>
    <message>
        <source>compare with ▾</source>
        <translation>comparar com ▾</translation>
    </message>
    <message>
        <source>Other models drawn beside it.</source>
        <translation>Outros modelos desenhados ao lado.</translation>
    </message>
    <message>
        <source>Bits per cached value on the plot: 16 for FP16/BF16 models (the usual), 8 / 4 / 2 quantized.</source>
        <translation>Bits por valor na cache no gráfico: 16 para modelos FP16/BF16 (o usual), 8 / 4 / 2 quantizados.</translation>
    </message>
    <message>
        <source>Sequences served at once on the plot: each has its own cache, so the curves scale with it.</source>
        <translation>Sequências atendidas ao mesmo tempo no gráfico: cada uma tem sua própria cache, então as curvas crescem junto.</translation>
    </message>
    <message>
        <source>KV bits</source>
        <translation>bits KV</translation>
    </message>
    <message>
        <source>batch</source>
        <translation>lote</translation>
    </message>
    <message>
        <source>The bill: formula and run</source>
        <translation>A conta: fórmula e execução</translation>
    </message>
    <message>
        <source>Context 1k → 1M</source>
        <translation>Contexto 1k → 1M</translation>
    </message>
    <message>
        <source>The formula with every term editable, checked against the run&apos;s real caches.</source>
        <translation>A fórmula com todos os termos editáveis, conferida com as caches reais da execução.</translation>
    </message>
    <message>
        <source>KV bytes as the context grows, for real models, beside their weights and GPU memories.</source>
        <translation>Bytes KV conforme o contexto cresce, para modelos reais, ao lado dos seus pesos e das memórias de GPU.</translation>
    </message>
    <message>
        <source>no preset named {name}</source>
        <translation>nenhum preset chamado {name}</translation>
    </message>
    <message>
        <source>weights of {n} parameters: {sizes}</source>
        <translation>pesos de {n} parâmetros: {sizes}</translation>
    </message>
</context>
</TS>
