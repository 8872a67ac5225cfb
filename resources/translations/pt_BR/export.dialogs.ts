<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>export_dialogs</name>
    <message>
        <source>PNG (screen pixels)</source>
        <translation>PNG (pixels da tela)</translation>
    </message>
    <message>
        <source>PNG at 2× pixels (sharp on 4K)</source>
        <translation>PNG com 2× pixels (nítido em 4K)</translation>
    </message>
    <message>
        <source>SVG (vector, plots only)</source>
        <translation>SVG (vetorial, só gráficos)</translation>
    </message>
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
        <source>Export a picture</source>
        <translation>Exportar uma imagem</translation>
    </message>
    <message>
        <source>view</source>
        <translation>vista</translation>
    </message>
    <message>
        <source>as</source>
        <translation>como</translation>
    </message>
    <message>
        <source>instant (one frame per step)</source>
        <translation>instantânea (um quadro por passo)</translation>
    </message>
    <message>
        <source>{speed} ({seconds} s per step)</source>
        <translation>{speed} ({seconds} s por passo)</translation>
    </message>
    <message>
        <source>Export the run as GIF or MP4</source>
        <translation>Exportar a execução como GIF ou MP4</translation>
    </message>
    <message>
        <source>MP4 (H.264: small, for slides and video)</source>
        <translation>MP4 (H.264: pequeno, para slides e vídeo)</translation>
    </message>
    <message>
        <source>GIF (plays anywhere, larger)</source>
        <translation>GIF (abre em qualquer lugar, maior)</translation>
    </message>
    <message>
        <source>format</source>
        <translation>formato</translation>
    </message>
    <message>
        <source>to</source>
        <translation>até</translation>
    </message>
    <message>
        <source>steps (0 = prefill)</source>
        <translation>passos (0 = prefill)</translation>
    </message>
    <message>
        <source>as the window ({size})</source>
        <translation>como a janela ({size})</translation>
    </message>
    <message>
        <source>size</source>
        <translation>tamanho</translation>
    </message>
    <message>
        <source>frames per second</source>
        <translation>quadros por segundo</translation>
    </message>
    <message>
        <source>animation</source>
        <translation>animação</translation>
    </message>
    <message>
        <source>the whole window</source>
        <translation>a janela inteira</translation>
    </message>
    <message>
        <source>the lanes only</source>
        <translation>só as lanes</translation>
    </message>
    <message>
        <source>film</source>
        <translation>filmar</translation>
    </message>
    <message>
        <source>{n} frames ({k} per step), {seconds} s</source>
        <translation>{n} quadros ({k} por passo), {seconds} s</translation>
    </message>
</context>
</TS>
