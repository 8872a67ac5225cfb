<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>recent</name>
    <message>
        <source>No cache vs KV cache (the default pair) — tiny</source>
        <translation>Sem cache vs cache KV (o par padrão) — tiny</translation>
    </message>
    <message>
        <source>KV cache vs a sliding window vs sinks + window — tiny</source>
        <translation>Cache KV vs janela deslizante vs sinks + janela — tiny</translation>
    </message>
    <message>
        <source>KV cache vs int8 and int4 caches — tiny</source>
        <translation>Cache KV vs caches int8 e int4 — tiny</translation>
    </message>
    <message>
        <source>Recent runs</source>
        <translation>Execuções recentes</translation>
    </message>
    <message>
        <source>Demos (open instantly)</source>
        <translation>Demos (abrem na hora)</translation>
    </message>
    <message>
        <source>{path} no longer exists: removed from the recent runs</source>
        <translation>{path} não existe mais: removido das execuções recentes</translation>
    </message>
    <message>
        <source>(none yet: runs you open or save appear here)</source>
        <translation>(nenhuma ainda: as execuções que você abrir ou salvar aparecem aqui)</translation>
    </message>
    <message>
        <source>Clear the list</source>
        <translation>Limpar a lista</translation>
    </message>
    <message>
        <source>(no demos bundled: scripts/make_demos.py makes them)</source>
        <translation>(nenhuma demo incluída: scripts/make_demos.py as cria)</translation>
    </message>
</context>
</TS>
