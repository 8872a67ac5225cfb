<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>presenter</name>
    <message>
        <source>Faster animation</source>
        <translation>Animação mais rápida</translation>
    </message>
    <message>
        <source>Slower animation</source>
        <translation>Animação mais lenta</translation>
    </message>
    <message>
        <source>Next set of lanes</source>
        <translation>Próximo conjunto de lanes</translation>
    </message>
    <message>
        <source>Layer {n}</source>
        <translation>Camada {n}</translation>
    </message>
    <message>
        <source>Presenter mode</source>
        <translation>Modo apresentação</translation>
    </message>
    <message>
        <source>Leave presenter mode</source>
        <translation>Sair do modo apresentação</translation>
    </message>
    <message>
        <source>Full screen</source>
        <translation>Tela cheia</translation>
    </message>
    <message>
        <source>presenter mode: Space play · → step · ← back · Home reset · +/− speed · 1–9 layer · Esc leaves · ? keys</source>
        <translation>modo apresentação: Espaço reproduz · → avança · ← volta · Home recomeça · +/− velocidade · 1–9 camada · Esc sai · ? teclas</translation>
    </message>
    <message>
        <source>presenter mode left (F5 enters again)</source>
        <translation>modo apresentação encerrado (F5 entra de novo)</translation>
    </message>
</context>
</TS>
