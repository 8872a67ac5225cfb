<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>docks</name>
    <message>
        <source>Memory: the KV cache bill</source>
        <translation>Memória: a conta da cache KV</translation>
    </message>
    <message>
        <source>Roofline: compute-bound or memory-bound</source>
        <translation>Roofline: limitado por cálculo ou por memória</translation>
    </message>
    <message>
        <source>Requests: paged blocks and prefix caching</source>
        <translation>Requisições: blocos paginados e cache de prefixos</translation>
    </message>
    <message>
        <source>the engine is still starting</source>
        <translation>o motor ainda está iniciando</translation>
    </message>
</context>
</TS>
