<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.roofline_plot</name>
    <message>
        <source>arithmetic intensity (FLOP per byte moved)</source>
        <translation>intensidade aritmética (FLOP por byte movido)</translation>
    </message>
    <message>
        <source>ridge {ridge} FLOP/B</source>
        <translation>crista {ridge} FLOP/B</translation>
    </message>
    <message>
        <source>memory {bandwidth}B/s</source>
        <translation>memória {bandwidth}B/s</translation>
    </message>
    <message>
        <source>compute {flops}FLOP/s</source>
        <translation>cálculo {flops}FLOP/s</translation>
    </message>
</context>
</TS>
