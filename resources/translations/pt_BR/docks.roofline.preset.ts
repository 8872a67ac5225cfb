<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.roofline_preset</name>
    <message>
        <source>vendor figures: dense BF16 tensor FLOP/s and memory bandwidth (sources: docs/roofline.md)</source>
        <translation>números do fabricante: FLOP/s densos de tensor em BF16 e largura de banda da memória (fontes: docs/roofline.md)</translation>
    </message>
    <message>
        <source>n: tokens in the context after the step</source>
        <translation>n: tokens no contexto depois do passo</translation>
    </message>
    <message>
        <source>P: tokens the prefill computes at once (at most n)</source>
        <translation>P: tokens que o prefill calcula de uma vez (no máximo n)</translation>
    </message>
    <message>
        <source>sequences decoded together: the weights are read once for all of them</source>
        <translation>sequências decodificadas juntas: os pesos são lidos uma vez para todas</translation>
    </message>
    <message>
        <source>bits per weight (weight-only quantization: fewer bytes, the same tensor-core rate)</source>
        <translation>bits por peso (quantização só dos pesos: menos bytes, a mesma taxa dos tensor cores)</translation>
    </message>
    <message>
        <source>bits per cached K/V element</source>
        <translation>bits por elemento K/V na cache</translation>
    </message>
    <message>
        <source>model</source>
        <translation>modelo</translation>
    </message>
    <message>
        <source>on</source>
        <translation>em</translation>
    </message>
    <message>
        <source>batch</source>
        <translation>lote</translation>
    </message>
    <message>
        <source>context n</source>
        <translation>contexto n</translation>
    </message>
    <message>
        <source>prefill P</source>
        <translation>prefill P</translation>
    </message>
    <message>
        <source>weights bits</source>
        <translation>bits pesos</translation>
    </message>
    <message>
        <source>K/V bits</source>
        <translation>bits K/V</translation>
    </message>
    <message>
        <source>the two steps under the chip&apos;s roof (dense BF16)</source>
        <translation>os dois passos sob o teto do chip (BF16 denso)</translation>
    </message>
    <message>
        <source>n = {n} is past {model}&apos;s own context ({context}).</source>
        <translation>n = {n} passa do contexto do próprio {model} ({context}).</translation>
    </message>
    <message>
        <source>Weights + cache ({size}) do not fit in one {chip} ({memory}).</source>
        <translation>Pesos + cache ({size}) não cabem em uma {chip} ({memory}).</translation>
    </message>
    <message>
        <source>{n} tokens × {batch} sequences</source>
        <translation>{n} tokens × {batch} sequências</translation>
    </message>
    <message>
        <source>{n} tokens</source>
        <translation>{n} tokens</translation>
    </message>
    <message>
        <source>On one &lt;b&gt;{chip}&lt;/b&gt;, a &lt;b&gt;{model}&lt;/b&gt; decode step at {at} moves {bytes} ({weights} weights + {kv} K/V) for {flops}FLOP: {intensity} FLOP/byte against a ridge of {ridge} — at least &lt;b&gt;{time}&lt;/b&gt;, {limit}.</source>
        <translation>Em uma &lt;b&gt;{chip}&lt;/b&gt;, um passo de decode do &lt;b&gt;{model}&lt;/b&gt; com {at} move {bytes} ({weights} de pesos + {kv} de K/V) para {flops}FLOP: {intensity} FLOP/byte contra uma crista de {ridge} — pelo menos &lt;b&gt;{time}&lt;/b&gt;, {limit}.</translation>
    </message>
    <message>
        <source>bytes</source>
        <translation>bytes</translation>
    </message>
    <message>
        <source>compute</source>
        <translation>cálculo</translation>
    </message>
    <message>
        <source>memory</source>
        <translation>memória</translation>
    </message>
    <message>
        <source>bound</source>
        <translation>limite</translation>
    </message>
    <message>
        <source>decode (1 token)</source>
        <translation>decode (1 token)</translation>
    </message>
    <message>
        <source>prefill ({n})</source>
        <translation>prefill ({n})</translation>
    </message>
</context>
</TS>
