<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>dialogs</name>
    <message>
        <source>Open a checkpoint (its config.json) or a .gguf file</source>
        <translation>Abrir um checkpoint (seu config.json) ou um arquivo .gguf</translation>
    </message>
    <message>
        <source>Models (config.json *.gguf);;All files (*)</source>
        <translation>Modelos (config.json *.gguf);;Todos os arquivos (*)</translation>
    </message>
    <message>
        <source>Save run</source>
        <translation>Salvar execução</translation>
    </message>
    <message>
        <source>kvsim runs (*.kvsim)</source>
        <translation>execuções do kvsim (*.kvsim)</translation>
    </message>
    <message>
        <source>Open run</source>
        <translation>Abrir execução</translation>
    </message>
    <message>
        <source>kvsim runs (*.kvsim);;all files (*)</source>
        <translation>execuções do kvsim (*.kvsim);;todos os arquivos (*)</translation>
    </message>
</context>
</TS>
