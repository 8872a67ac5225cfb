<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.requests_job</name>
    <message>
        <source>sequential</source>
        <translation>sequencial</translation>
    </message>
    <message>
        <source>interleaved</source>
        <translation>intercalado</translation>
    </message>
    <message>
        <source>no demo request lists found in resources/requests</source>
        <extracomment>the demo list run by default: one whose requests share a prefix for this kind of model the same in a Portuguese app: Portuguese questions behind a Portuguese system prompt, a Portuguese opening the block sizes the paged-waste trade-off line is computed for (the chosen one is added)</extracomment>
        <translation>nenhuma lista de requisições de demonstração encontrada em resources/requests</translation>
    </message>
    <message>
        <source>no model is loaded yet</source>
        <translation>nenhum modelo carregado ainda</translation>
    </message>
    <message>
        <source>schedule must be one of {names}</source>
        <translation>a ordem deve ser uma de {names}</translation>
    </message>
</context>
</TS>
