<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.memory_live</name>
    <message>
        <source>no closed form for this policy (a plug-in): the live bytes are its own count</source>
        <translation>sem fórmula fechada para esta política (um plug-in): os bytes reais são a contagem dela</translation>
    </message>
    <message>
        <source>✗ live differs from the formula by {diff} B</source>
        <translation>✗ o real difere da fórmula em {diff} B</translation>
    </message>
    <message>
        <source>live = formula {extra} B ✓ — {why}</source>
        <translation>real = fórmula {extra} B ✓ — {why}</translation>
    </message>
    <message>
        <source>formula = live ✓</source>
        <translation>fórmula = real ✓</translation>
    </message>
    <message>
        <source>What each lane of the run on screen really holds after the step under the cursor, next to what
the formula says it should hold with that lane&apos;s own settings (window, bits) and the model&apos;s shape.</source>
        <translation>O que cada lane da execução na tela realmente guarda depois do passo sob o cursor, ao lado do que
a fórmula diz que ela deveria guardar com os ajustes da própria lane (janela, bits) e a forma do modelo.</translation>
    </message>
    <message>
        <source>&lt;b&gt;This run&lt;/b&gt;: no step yet — step once to compare the formula with the real cache.</source>
        <translation>&lt;b&gt;Esta execução&lt;/b&gt;: nenhum passo ainda — avance um passo para comparar a fórmula com a cache real.</translation>
    </message>
    <message>
        <source>&lt;b&gt;The run on screen&lt;/b&gt;, step {step}: n = {n} tokens, {dtype} ({layers} layers × {kv_heads} K/V heads × d {head_dim})</source>
        <translation>&lt;b&gt;A execução na tela&lt;/b&gt;, passo {step}: n = {n} tokens, {dtype} ({layers} camadas × {kv_heads} cabeças K/V × d {head_dim})</translation>
    </message>
    <message>
        <source>lane</source>
        <translation>lane</translation>
    </message>
    <message>
        <source>live</source>
        <translation>real</translation>
    </message>
    <message>
        <source>formula</source>
        <translation>fórmula</translation>
    </message>
    <message>
        <source>The lane (a cache policy) of the run on screen.</source>
        <translation>A lane (uma política de cache) da execução na tela.</translation>
    </message>
    <message>
        <source>Bytes the lane&apos;s cache really holds after this step, as it reported them (K/V values, and any scales).</source>
        <translation>Bytes que a cache da lane realmente guarda depois deste passo, como ela os informou (valores K/V e eventuais escalas).</translation>
    </message>
    <message>
        <source>2 · L · H_kv · d · min(n, W) · b · bits/8 with this lane&apos;s window W and bits (b = 1).</source>
        <translation>2 · L · H_kv · d · min(n, W) · b · bits/8 com a janela W e os bits desta lane (b = 1).</translation>
    </message>
    <message>
        <source>✓: the formula accounts for every byte the lane holds.</source>
        <translation>✓: a fórmula explica cada byte que a lane guarda.</translation>
    </message>
    <message>
        <source>{size}: what {lane} holds after step {step}</source>
        <translation>{size}: o que {lane} guarda depois do passo {step}</translation>
    </message>
    <message>
        <source>no formula known for this policy</source>
        <translation>nenhuma fórmula conhecida para esta política</translation>
    </message>
    <message>
        <source>{product} = {bytes} B ({size}) at {bits} bits</source>
        <translation>{product} = {bytes} B ({size}) com {bits} bits</translation>
    </message>
    <message>
        <source>&lt;b&gt;formula = live ✓&lt;/b&gt; for the one lane the formula knows</source>
        <translation>&lt;b&gt;fórmula = real ✓&lt;/b&gt; na única lane que a fórmula conhece</translation>
    </message>
    <message>
        <source>&lt;b&gt;formula = live ✓&lt;/b&gt; for all {n} lanes the formula knows</source>
        <translation>&lt;b&gt;fórmula = real ✓&lt;/b&gt; nas {n} lanes que a fórmula conhece</translation>
    </message>
    <message>
        <source> (1 plug-in lane without one)</source>
        <translation> (1 lane de plug-in sem fórmula)</translation>
    </message>
    <message>
        <source> ({n} plug-in lanes without one)</source>
        <translation> ({n} lanes de plug-in sem fórmula)</translation>
    </message>
    <message>
        <source>✗ {n} lane(s) hold other bytes than the formula</source>
        <translation>✗ {n} lane(s) guardam bytes diferentes da fórmula</translation>
    </message>
</context>
</TS>
