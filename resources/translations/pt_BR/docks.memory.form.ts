<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.memory_form</name>
    <message>
        <source>layers L</source>
        <translation>camadas L</translation>
    </message>
    <message>
        <source>K/V heads H_kv</source>
        <translation>cabeças K/V H_kv</translation>
    </message>
    <message>
        <source>head dim d</source>
        <translation>dim. cabeça d</translation>
    </message>
    <message>
        <source>tokens n</source>
        <translation>tokens n</translation>
    </message>
    <message>
        <source>batch b</source>
        <translation>lote b</translation>
    </message>
    <message>
        <source>bits</source>
        <translation>bits</translation>
    </message>
    <message>
        <source>window W</source>
        <translation>janela W</translation>
    </message>
    <message>
        <source>per layer</source>
        <translation>por camada</translation>
    </message>
    <message>
        <source>L: transformer layers. Every layer keeps its own keys and values.</source>
        <translation>L: camadas do transformer. Cada camada guarda suas próprias chaves e valores.</translation>
    </message>
    <message>
        <source>H_kv: key/value heads. Grouped-query (GQA) and multi-query (MQA) attention share one K/V head
between several query heads: the cache counts K/V heads, not query heads.</source>
        <translation>H_kv: cabeças de chave/valor. A atenção grouped-query (GQA) e multi-query (MQA) compartilha uma cabeça K/V
entre várias cabeças de query: a cache conta cabeças K/V, não cabeças de query.</translation>
    </message>
    <message>
        <source>d: numbers in one head&apos;s key (and in its value).</source>
        <translation>d: números na chave de uma cabeça (e no seu valor).</translation>
    </message>
    <message>
        <source>n: tokens whose keys and values are kept (prompt + generated so far).</source>
        <translation>n: tokens cujas chaves e valores são guardados (prompt + gerados até agora).</translation>
    </message>
    <message>
        <source>b: sequences served at once. Each one has its own cache.</source>
        <translation>b: sequências atendidas ao mesmo tempo. Cada uma tem sua própria cache.</translation>
    </message>
    <message>
        <source>How many bits each cached number takes: 16 for an FP16/BF16 model, 32 as kvsim runs on the CPU,
8 / 4 / 2 for a quantized cache (its scales and zero points come on top).</source>
        <translation>Quantos bits ocupa cada número na cache: 16 num modelo FP16/BF16, 32 como o kvsim roda na CPU,
8 / 4 / 2 numa cache quantizada (suas escalas e pontos zero vêm por cima).</translation>
    </message>
    <message>
        <source>W: a sliding window. Each layer keeps only the last W tokens, so the cache stops
growing at W. &apos;none&apos; keeps every token.</source>
        <translation>W: uma janela deslizante. Cada camada guarda só os últimos W tokens, então a cache para
de crescer em W. &apos;nenhuma&apos; guarda todos os tokens.</translation>
    </message>
    <message>
        <source>none</source>
        <translation>nenhuma</translation>
    </message>
    <message>
        <source>A window per layer, repeated over the layers: &apos;4096, full&apos; alternates local and global layers
(Gemma 2), &apos;512, 512, 512, 512, 512, full&apos; is Gemma 3. &apos;full&apos; keeps every token. Same as
`kvsim memory --layer-windows`.</source>
        <translation>Uma janela por camada, repetida ao longo das camadas: &apos;4096, full&apos; alterna camadas locais e globais
(Gemma 2), &apos;512, 512, 512, 512, 512, full&apos; é o Gemma 3. &apos;full&apos; guarda todos os tokens. O mesmo que
`kvsim memory --layer-windows`.</translation>
    </message>
    <message>
        <source>MHA: one K/V head per query head. GQA: groups share one. MQA: all share one.</source>
        <translation>MHA: uma cabeça K/V por cabeça de query. GQA: grupos compartilham uma. MQA: todas compartilham uma.</translation>
    </message>
    <message>
        <source>kv bytes = 2 (a key and a value) × Σ over layers of the tokens each layer keeps × H_kv × d × b × bits/8</source>
        <translation>bytes kv = 2 (uma chave e um valor) × Σ sobre as camadas dos tokens que cada camada guarda × H_kv × d × b × bits/8</translation>
    </message>
    <message>
        <source>Per token: what one more token costs in every layer (batch 1). Next token: what it adds now
(a full window adds nothing).</source>
        <translation>Por token: quanto custa mais um token em todas as camadas (lote 1). Próximo token: quanto ele soma agora
(uma janela cheia não soma nada).</translation>
    </message>
    <message>
        <source>MHA: {n} K/V heads, one per query head</source>
        <translation>MHA: {n} cabeças K/V, uma por cabeça de query</translation>
    </message>
    <message>
        <source>MQA: 1 K/V head shared by all {heads} query heads</source>
        <translation>MQA: 1 cabeça K/V compartilhada pelas {heads} cabeças de query</translation>
    </message>
    <message>
        <source>GQA: {n} K/V heads, each shared by {group} of {heads} query heads</source>
        <translation>GQA: {n} cabeças K/V, cada uma compartilhada por {group} das {heads} cabeças de query</translation>
    </message>
    <message>
        <source>{bytes} B per token in every layer ({size}) · the next token adds {new} B now</source>
        <translation>{bytes} B por token em todas as camadas ({size}) · o próximo token soma {new} B agora</translation>
    </message>
</context>
</TS>
