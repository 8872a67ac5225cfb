<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>session</name>
    <message>
        <source>the run&apos;s model config is not usable: {error}</source>
        <translation>a configuração do modelo desta execução não pode ser usada: {error}</translation>
    </message>
    <message>
        <source>saved run</source>
        <translation>execução salva</translation>
    </message>
</context>
</TS>
