<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.roofline_words</name>
    <message>
        <source>the whole step</source>
        <translation>o passo inteiro</translation>
    </message>
    <message>
        <source>weight matmuls (projections, MLP, LM head)</source>
        <translation>matmuls dos pesos (projeções, MLP, LM head)</translation>
    </message>
    <message>
        <source>attention (q·Kᵀ and ·V)</source>
        <translation>atenção (q·Kᵀ e ·V)</translation>
    </message>
    <message>
        <source>memory-bound</source>
        <translation>limitado por memória</translation>
    </message>
    <message>
        <source>compute-bound</source>
        <translation>limitado por cálculo</translation>
    </message>
    <message>
        <source>memory</source>
        <translation>memória</translation>
    </message>
    <message>
        <source>compute</source>
        <translation>cálculo</translation>
    </message>
    <message>
        <source>1 row</source>
        <translation>1 linha</translation>
    </message>
    <message>
        <source>{n} rows</source>
        <translation>{n} linhas</translation>
    </message>
    <message>
        <source>{lane}: {rows}, {intensity} FLOP/byte, {achieved}FLOP/s</source>
        <translation>{lane}: {rows}, {intensity} FLOP/byte, {achieved}FLOP/s</translation>
    </message>
    <message>
        <source>step {step} ({phase}, {new} new of {context} rows) · lane {lane} · {component}: {flops}FLOP over {bytes}B moved = {intensity} FLOP/byte · {achieved}FLOP/s achieved in {ms} ms</source>
        <translation>passo {step} ({phase}, {new} de {context} linhas novas) · lane {lane} · {component}: {flops}FLOP sobre {bytes}B movidos = {intensity} FLOP/byte · {achieved}FLOP/s alcançados em {ms} ms</translation>
    </message>
</context>
</TS>
