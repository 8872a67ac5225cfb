<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>lesson</name>
    <message>
        <source>◀ Back</source>
        <translation>◀ Voltar</translation>
    </message>
    <message>
        <source>previous lesson step (Page Up)</source>
        <translation>passo anterior da lição (Page Up)</translation>
    </message>
    <message>
        <source>Next ▶</source>
        <translation>Próximo ▶</translation>
    </message>
    <message>
        <source>next lesson step (Page Down)</source>
        <translation>próximo passo da lição (Page Down)</translation>
    </message>
    <message>
        <source>getting there …</source>
        <translation>preparando …</translation>
    </message>
    <message>
        <source>this step&apos;s state was not reached in time</source>
        <translation>o estado deste passo não foi alcançado a tempo</translation>
    </message>
    <message>
        <source>this step needs the model {model}: fetch it with `{command}`</source>
        <translation>este passo precisa do modelo {model}: baixe-o com `{command}`</translation>
    </message>
    <message>
        <source>the {dock} dock cannot {method} (a lesson written for a newer app?)</source>
        <translation>o painel {dock} não sabe {method} (uma lição escrita para um app mais novo?)</translation>
    </message>
    <message>
        <source>Lesson</source>
        <translation>Lição</translation>
    </message>
</context>
</TS>
