<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.blocks</name>
    <message>
        <source>new</source>
        <translation>novo</translation>
    </message>
    <message>
        <source>write</source>
        <translation>escrita</translation>
    </message>
    <message>
        <source>hit</source>
        <translation>acerto</translation>
    </message>
    <message>
        <source>copy</source>
        <translation>cópia</translation>
    </message>
    <message>
        <source>evict</source>
        <translation>descarte</translation>
    </message>
    <message>
        <source>cached</source>
        <translation>em cache</translation>
    </message>
    <message>
        <source>freed</source>
        <translation>liberado</translation>
    </message>
    <message>
        <source>taken from the free list for this request</source>
        <translation>tirado da lista livre para esta requisição</translation>
    </message>
    <message>
        <source>rows written into it in this step</source>
        <translation>linhas escritas nele neste passo</translation>
    </message>
    <message>
        <source>found by its hash and reused: its rows were not computed again</source>
        <translation>achado pelo hash e reutilizado: suas linhas não foram calculadas de novo</translation>
    </message>
    <message>
        <source>copied before a write (copy-on-write)</source>
        <translation>copiado antes de uma escrita (copy-on-write)</translation>
    </message>
    <message>
        <source>its cached rows were dropped so it could be handed out again</source>
        <translation>suas linhas em cache foram descartadas para que ele pudesse ser entregue de novo</translation>
    </message>
    <message>
        <source>freed, but its rows stay findable by hash</source>
        <translation>liberado, mas suas linhas continuam achadas pelo hash</translation>
    </message>
    <message>
        <source>freed, nothing to reuse</source>
        <translation>liberado, nada a reutilizar</translation>
    </message>
    <message>
        <source>press Run: the pool&apos;s blocks are drawn here</source>
        <translation>aperte Executar: os blocos do pool são desenhados aqui</translation>
    </message>
</context>
</TS>
