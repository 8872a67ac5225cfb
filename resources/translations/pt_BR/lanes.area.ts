<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.lane_area</name>
    <message>
        <source>Lanes</source>
        <translation>Lanes</translation>
    </message>
    <message>
        <source>loading the model …</source>
        <translation>carregando o modelo …</translation>
    </message>
</context>
</TS>
