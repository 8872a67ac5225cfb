<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>shortcuts</name>
    <message>
        <source>Layer 0 … 8</source>
        <translation>Camada 0 … 8</translation>
    </message>
    <message>
        <source>hover a token or row</source>
        <translation>passe o mouse sobre um token ou linha</translation>
    </message>
    <message>
        <source>the same token highlighted in every view</source>
        <translation>o mesmo token destacado em todas as vistas</translation>
    </message>
    <message>
        <source>kvsim — keys</source>
        <translation>kvsim — teclas</translation>
    </message>
    <message>
        <source>Keys (shortcut sheet)</source>
        <translation>Teclas (folha de atalhos)</translation>
    </message>
</context>
</TS>
