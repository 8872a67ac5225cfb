<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>splash</name>
    <message>
        <source>See the KV cache: a transformer run token by token, without and with a cache.</source>
        <translation>Veja o cache KV: um transformer executado token a token, sem e com o cache.</translation>
    </message>
    <message>
        <source>loading the engine …</source>
        <translation>carregando o motor …</translation>
    </message>
</context>
</TS>
