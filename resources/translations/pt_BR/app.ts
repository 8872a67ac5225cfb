<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>app</name>
    <message>
        <source>unexpected error: {error} — the app may show something stale; Reset (Home) starts the run afresh</source>
        <translation>erro inesperado: {error} — o app pode mostrar algo desatualizado; Recomeçar (Home) inicia a execução de novo</translation>
    </message>
</context>
</TS>
