<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>toolbar</name>
    <message>
        <source>random · Llama GQA (4 layers, 8 heads, 2 kv)</source>
        <translation>aleatório · Llama GQA (4 camadas, 8 cabeças, 2 kv)</translation>
    </message>
    <message>
        <source>random · Llama MQA (4 layers, 8 heads, 1 kv)</source>
        <translation>aleatório · Llama MQA (4 camadas, 8 cabeças, 1 kv)</translation>
    </message>
    <message>
        <source>random · Llama MHA (4 layers, 8 heads)</source>
        <translation>aleatório · Llama MHA (4 camadas, 8 cabeças)</translation>
    </message>
    <message>
        <source>random · GPT-2 (4 layers, 4 heads, 128 dim)</source>
        <translation>aleatório · GPT-2 (4 camadas, 4 cabeças, dim. 128)</translation>
    </message>
    <message>
        <source>{model} (not fetched: kvsim models get {model})</source>
        <translation>{model} (não baixado: kvsim models get {model})</translation>
    </message>
    <message>
        <source>{model} (bundled)</source>
        <translation>{model} (embutido)</translation>
    </message>
    <message>
        <source>{model} (fetched)</source>
        <translation>{model} (baixado)</translation>
    </message>
    <message>
        <source>no cache</source>
        <translation>sem cache</translation>
    </message>
    <message>
        <source>KV cache</source>
        <translation>cache KV</translation>
    </message>
    <message>
        <source>Controls</source>
        <translation>Controles</translation>
    </message>
    <message>
        <source>model</source>
        <translation>modelo</translation>
    </message>
    <message>
        <source>example ({language})</source>
        <translation>exemplo ({language})</translation>
    </message>
    <message>
        <source>prompt: pick an example (English / Português) or type; Enter restarts</source>
        <translation>prompt: escolha um exemplo (English / Português) ou digite; Enter recomeça</translation>
    </message>
    <message>
        <source>↺ Reset</source>
        <translation>↺ Recomeçar</translation>
    </message>
    <message>
        <source>restart the run with this prompt (Home)</source>
        <translation>recomeçar a execução com este prompt (Home)</translation>
    </message>
    <message>
        <source>◀ Back</source>
        <translation>◀ Voltar</translation>
    </message>
    <message>
        <source>step back (redraw from the record) (Left)</source>
        <translation>voltar um passo (redesenhado do registro) (←)</translation>
    </message>
    <message>
        <source>Step ▶</source>
        <translation>Avançar ▶</translation>
    </message>
    <message>
        <source>next step (computes one if at the end) (Right)</source>
        <translation>próximo passo (calcula um se estiver no fim) (→)</translation>
    </message>
    <message>
        <source>▶▶ Play</source>
        <translation>▶▶ Reproduzir</translation>
    </message>
    <message>
        <source>play / pause (Space)</source>
        <translation>reproduzir / pausar (Espaço)</translation>
    </message>
    <message>
        <source>View controls</source>
        <translation>Controles de visualização</translation>
    </message>
    <message>
        <source>animation speed</source>
        <translation>velocidade da animação</translation>
    </message>
    <message>
        <source>layer</source>
        <translation>camada</translation>
    </message>
    <message>
        <source>query head (GQA: the K/V head it reads is shown in the titles)</source>
        <translation>cabeça de query (GQA: a cabeça K/V que ela lê aparece nos títulos)</translation>
    </message>
    <message>
        <source>View</source>
        <translation>Exibir</translation>
    </message>
    <message>
        <source>save or open a run (.kvsim); show or hide lanes and panels; the default layout; the language</source>
        <translation>salvar ou abrir uma execução (.kvsim); mostrar ou ocultar lanes e painéis; a disposição padrão; o idioma</translation>
    </message>
    <message>
        <source>the lanes, side by side: pick a set, or type cache policies separated by commas (known: {known}; `uncached` = `none`, `cached` = `kv`) and press Enter</source>
        <translation>as lanes, lado a lado: escolha um conjunto ou digite políticas de cache separadas por vírgulas (conhecidas: {known}; `uncached` = `none`, `cached` = `kv`) e aperte Enter</translation>
    </message>
    <message>
        <source>Open checkpoint directory or .gguf…</source>
        <translation>Abrir pasta de checkpoint ou .gguf…</translation>
    </message>
    <message>
        <source>model {model}: {family}, {layers} layers, {heads} heads / {kv_heads} kv heads, head dim {head_dim}, context {context}, {params} parameters</source>
        <translation>modelo {model}: {family}, {layers} camadas, {heads} cabeças / {kv_heads} cabeças kv, dim. da cabeça {head_dim}, contexto {context}, {params} parâmetros</translation>
    </message>
    <message>
        <source>a Portuguese prompt: {model} writes Portuguese — pick it in the model box</source>
        <translation>um prompt em português: {model} escreve português — escolha-o na caixa de modelos</translation>
    </message>
    <message>
        <source>a Portuguese prompt: `kvsim models get {model}` fetches a model that writes Portuguese</source>
        <translation>um prompt em português: `kvsim models get {model}` baixa um modelo que escreve português</translation>
    </message>
    <message>
        <source>❚❚ Pause</source>
        <translation>❚❚ Pausar</translation>
    </message>
    <message>
        <source>layer {n}</source>
        <translation>camada {n}</translation>
    </message>
    <message>
        <source>head {n} · kv {kv}</source>
        <translation>cabeça {n} · kv {kv}</translation>
    </message>
    <message>
        <source>all heads</source>
        <translation>todas as cabeças</translation>
    </message>
</context>
</TS>
