<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.blocks_table</name>
    <message>
        <source>logical j</source>
        <translation>lógico j</translation>
    </message>
    <message>
        <source>→ physical b</source>
        <translation>→ físico b</translation>
    </message>
    <message>
        <source>rows</source>
        <translation>linhas</translation>
    </message>
    <message>
        <source>the request&apos;s own numbering of its blocks: logical block j holds positions j·B … j·B+B−1</source>
        <translation>a numeração dos blocos da própria requisição: o bloco lógico j guarda as posições j·B … j·B+B−1</translation>
    </message>
    <message>
        <source>where that block lives in the shared pool (the grid&apos;s #b): the block table maps j → b</source>
        <translation>onde esse bloco fica no pool compartilhado (o #b da grade): a tabela de blocos mapeia j → b</translation>
    </message>
    <message>
        <source>how many of the block&apos;s B slots hold this request&apos;s rows (&apos;hit&apos;: reused from the prefix cache)</source>
        <translation>quantos dos B slots do bloco guardam linhas desta requisição (“acerto”: reutilizado da cache de prefixos)</translation>
    </message>
    <message>
        <source>{held}/{size} hit</source>
        <translation>{held}/{size} acerto</translation>
    </message>
</context>
</TS>
