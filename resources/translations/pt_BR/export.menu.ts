<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>export</name>
    <message>
        <source>Export for slides</source>
        <translation>Exportar para slides</translation>
    </message>
    <message>
        <source>Window as PNG…</source>
        <translation>Janela como PNG…</translation>
    </message>
    <message>
        <source>Picture of a view (PNG 1×/2×, SVG)…</source>
        <translation>Imagem de uma vista (PNG 1×/2×, SVG)…</translation>
    </message>
    <message>
        <source>Run as GIF or MP4…</source>
        <translation>Execução como GIF ou MP4…</translation>
    </message>
    <message>
        <source>Figures per step as CSV…</source>
        <translation>Números por passo como CSV…</translation>
    </message>
    <message>
        <source>the whole window</source>
        <translation>a janela inteira</translation>
    </message>
    <message>
        <source>the lanes</source>
        <translation>as lanes</translation>
    </message>
    <message>
        <source>lane {name}</source>
        <translation>lane {name}</translation>
    </message>
    <message>
        <source>no view named {name} (there are: {there})</source>
        <translation>nenhuma vista chamada {name} (existem: {there})</translation>
    </message>
    <message>
        <source>{name} has no vector form: export it as PNG</source>
        <translation>{name} não tem forma vetorial: exporte como PNG</translation>
    </message>
    <message>
        <source>unknown picture kind {kind}</source>
        <translation>tipo de imagem desconhecido {kind}</translation>
    </message>
    <message>
        <source>a step is being computed: export when it is done</source>
        <translation>um passo está sendo calculado: exporte quando terminar</translation>
    </message>
    <message>
        <source>the steps must lie in 0..{last}, got {first_asked}..{last_asked}</source>
        <translation>os passos devem estar em 0..{last}, recebido {first_asked}..{last_asked}</translation>
    </message>
    <message>
        <source>Writing {n} frames to {file} …</source>
        <translation>Gravando {n} quadros em {file} …</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>Cancelar</translation>
    </message>
    <message>
        <source>Export</source>
        <translation>Exportar</translation>
    </message>
    <message>
        <source>wrote {path}: {n} frames, {seconds} s</source>
        <translation>{path} gravado: {n} quadros, {seconds} s</translation>
    </message>
    <message>
        <source>nothing to export yet: run a step first</source>
        <translation>nada para exportar ainda: avance um passo primeiro</translation>
    </message>
    <message>
        <source>export cancelled</source>
        <translation>exportação cancelada</translation>
    </message>
    <message>
        <source>export failed: {error}</source>
        <translation>a exportação falhou: {error}</translation>
    </message>
    <message>
        <source>Save {view} as {format}</source>
        <translation>Salvar {view} como {format}</translation>
    </message>
    <message>
        <source>Save the figures per step</source>
        <translation>Salvar os números por passo</translation>
    </message>
    <message>
        <source>Save the run as {format}</source>
        <translation>Salvar a execução como {format}</translation>
    </message>
    <message>
        <source>wrote {path}</source>
        <translation>{path} gravado</translation>
    </message>
</context>
</TS>
