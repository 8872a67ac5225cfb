<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.roofline</name>
    <message>
        <source>whole step</source>
        <translation>passo inteiro</translation>
    </message>
    <message>
        <source>weight matmuls</source>
        <translation>matmuls dos pesos</translation>
    </message>
    <message>
        <source>attention</source>
        <translation>atenção</translation>
    </message>
    <message>
        <source>all three</source>
        <translation>os três</translation>
    </message>
    <message>
        <source>hover a point: its step, lane, component, intensity and FLOP/s</source>
        <translation>passe o mouse sobre um ponto: seu passo, lane, componente, intensidade e FLOP/s</translation>
    </message>
    <message>
        <source>this machine: measuring its peaks…</source>
        <translation>esta máquina: medindo seus picos…</translation>
    </message>
    <message>
        <source>show:</source>
        <translation>mostrar:</translation>
    </message>
    <message>
        <source>which counts place the points: the whole step, or the weight matmuls / attention alone</source>
        <translation>quais contagens posicionam os pontos: o passo inteiro, ou só as matmuls dos pesos / a atenção</translation>
    </message>
    <message>
        <source>Measure again</source>
        <translation>Medir de novo</translation>
    </message>
    <message>
        <source>time the matmul and the copy again (about a second, on the worker thread)</source>
        <translation>cronometrar de novo a matmul e a cópia (cerca de um segundo, na thread de trabalho)</translation>
    </message>
    <message>
        <source>left of the ridge: memory-bound · right of it: compute-bound</source>
        <translation>à esquerda da crista: limitado por memória · à direita: limitado por cálculo</translation>
    </message>
    <message>
        <source>this run on this machine</source>
        <translation>esta execução nesta máquina</translation>
    </message>
    <message>
        <source>a model on a GPU</source>
        <translation>um modelo numa GPU</translation>
    </message>
    <message>
        <source>this machine ({device}, {dtype}): measuring its peaks (a matmul and a copy)…</source>
        <translation>esta máquina ({device}, {dtype}): medindo seus picos (uma matmul e uma cópia)…</translation>
    </message>
    <message>
        <source>cached</source>
        <translation>da cache</translation>
    </message>
    <message>
        <source>measured in {seconds} s</source>
        <translation>medido em {seconds} s</translation>
    </message>
    <message>
        <source>this machine: {flops}FLOP/s · {bandwidth}B/s · ridge {ridge} FLOP/B ({how})</source>
        <translation>esta máquina: {flops}FLOP/s · {bandwidth}B/s · crista {ridge} FLOP/B ({how})</translation>
    </message>
    <message>
        <source>{name} ({device}, {dtype}, {key}): the best of a few {n}×{n} matmuls and of a few copies of {mib} MiB (bytes read + written), measured {when}</source>
        <translation>{name} ({device}, {dtype}, {key}): o melhor de algumas matmuls {n}×{n} e de algumas cópias de {mib} MiB (bytes lidos + escritos), medido em {when}</translation>
    </message>
    <message>
        <source>this machine&apos;s peaks could not be measured: {error}</source>
        <translation>não foi possível medir os picos desta máquina: {error}</translation>
    </message>
    <message>
        <source>step {step} ({phase}) — {lanes}</source>
        <translation>passo {step} ({phase}) — {lanes}</translation>
    </message>
    <message>
        <source> · filled: whole step, hollow: weight matmuls, small: attention</source>
        <translation> · cheio: passo inteiro, vazado: matmuls dos pesos, pequeno: atenção</translation>
    </message>
    <message>
        <source>cursor</source>
        <translation>cursor</translation>
    </message>
</context>
</TS>
