<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.lane_hover</name>
    <message>
        <source>row {row}: {token} · computed this step</source>
        <translation>linha {row}: {token} · calculada neste passo</translation>
    </message>
    <message>
        <source>row {row}: {token} · read from the cache</source>
        <translation>linha {row}: {token} · lida da cache</translation>
    </message>
    <message>
        <source>attention of {q} (position {row}) to {k} (position {col}): masked (a future position)</source>
        <translation>atenção de {q} (posição {row}) a {k} (posição {col}): mascarada (uma posição futura)</translation>
    </message>
    <message>
        <source>attention of {q} (position {row}) to {k} (position {col}): not seen by this lane (outside its window, or evicted)</source>
        <translation>atenção de {q} (posição {row}) a {k} (posição {col}): não vista por esta lane (fora da janela dela, ou descartada)</translation>
    </message>
    <message>
        <source>attention of {q} (position {row}) to {k} (position {col}): p = {p}</source>
        <translation>atenção de {q} (posição {row}) a {k} (posição {col}): p = {p}</translation>
    </message>
</context>
</TS>
