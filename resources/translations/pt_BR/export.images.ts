<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>export_images</name>
    <message>
        <source>could not write {path}</source>
        <translation>não foi possível gravar {path}</translation>
    </message>
    <message>
        <source>the SVG exporter failed: {error}</source>
        <translation>o exportador de SVG falhou: {error}</translation>
    </message>
    <message>
        <source>no such folder: {folder}</source>
        <translation>a pasta não existe: {folder}</translation>
    </message>
    <message>
        <source>cannot write into {folder} (permission denied)</source>
        <translation>não é possível gravar em {folder} (permissão negada)</translation>
    </message>
</context>
</TS>
