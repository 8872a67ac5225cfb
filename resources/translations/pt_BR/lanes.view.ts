<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.lanes</name>
    <message>
        <source>press Step (→) to run the prefill</source>
        <translation>pressione Avançar (→) para rodar o prefill</translation>
    </message>
    <message>
        <source>recomputed</source>
        <translation>recalculadas</translation>
    </message>
</context>
</TS>
