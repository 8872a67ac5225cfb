<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>animation</name>
    <message>
        <source>slow</source>
        <translation>lenta</translation>
    </message>
    <message>
        <source>normal</source>
        <translation>normal</translation>
    </message>
    <message>
        <source>fast</source>
        <translation>rápida</translation>
    </message>
    <message>
        <source>instant</source>
        <translation>instantânea</translation>
    </message>
</context>
</TS>
