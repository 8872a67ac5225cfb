<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.memory_plot</name>
    <message>
        <source>context (tokens)</source>
        <translation>contexto (tokens)</translation>
    </message>
    <message>
        <source>KV-cache bytes as the context grows (both axes logarithmic). Solid: the chosen model; dashed: the same
model as MHA; dotted: as MQA. Grey lines: the chosen model&apos;s weights at each precision; coloured dashed
lines: GPU memories. Where a curve crosses a weights line, the cache outgrows the model.</source>
        <translation>Bytes da cache KV conforme o contexto cresce (os dois eixos logarítmicos). Contínua: o modelo escolhido; tracejada: o mesmo
modelo como MHA; pontilhada: como MQA. Linhas cinza: os pesos do modelo escolhido em cada precisão; linhas
tracejadas coloridas: memórias de GPU. Onde uma curva cruza uma linha de pesos, a cache fica maior que o modelo.</translation>
    </message>
    <message>
        <source>The curves: each model&apos;s KV cache as the context grows.</source>
        <translation>As curvas: a cache KV de cada modelo conforme o contexto cresce.</translation>
    </message>
    <message>
        <source>Where the chosen model&apos;s cache becomes as large as its FP16 weights (batch and bits as above).</source>
        <translation>Onde a cache do modelo escolhido fica do tamanho dos seus pesos FP16 (lote e bits como acima).</translation>
    </message>
    <message>
        <source>KV cache at {bits} bits, batch {batch}</source>
        <translation>Cache KV com {bits} bits, lote {batch}</translation>
    </message>
    <message>
        <source>{kind} (1 K/V head)</source>
        <translation>{kind} (1 cabeça K/V)</translation>
    </message>
    <message>
        <source>{kind} ({n} K/V heads)</source>
        <translation>{kind} ({n} cabeças K/V)</translation>
    </message>
    <message>
        <source>its max context, {n} tokens</source>
        <translation>seu contexto máximo, {n} tokens</translation>
    </message>
    <message>
        <source>{model}&apos;s weights (left)</source>
        <translation>pesos do {model} (esquerda)</translation>
    </message>
    <message>
        <source>GPU memory (right)</source>
        <translation>memória de GPU (direita)</translation>
    </message>
    <message>
        <source>as {kind} it never does (its windows cap it)</source>
        <translation>como {kind} nunca fica (suas janelas a limitam)</translation>
    </message>
    <message>
        <source>as {kind} at {n} tokens</source>
        <translation>como {kind} em {n} tokens</translation>
    </message>
    <message>
        <source>&lt;b&gt;{model}&lt;/b&gt;: the KV cache outgrows its FP16 weights ({size}) — {where}.</source>
        <translation>&lt;b&gt;{model}&lt;/b&gt;: a cache KV fica maior que seus pesos FP16 ({size}) — {where}.</translation>
    </message>
</context>
</TS>
