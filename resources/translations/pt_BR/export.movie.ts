<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>export_movie</name>
    <message>
        <source>the file must end in .gif or .mp4, got {name}</source>
        <translation>o arquivo deve terminar em .gif ou .mp4, recebido {name}</translation>
    </message>
    <message>
        <source>the size must be between {smallest} and {largest}, got {size}</source>
        <translation>o tamanho deve estar entre {smallest} e {largest}, recebido {size}</translation>
    </message>
    <message>
        <source>an MP4&apos;s width and height must be even (H.264, yuv420p), got {size}</source>
        <translation>a largura e a altura de um MP4 devem ser pares (H.264, yuv420p), recebido {size}</translation>
    </message>
    <message>
        <source>the frame rate of a {format} must be between 1 and {most} fps, got {fps}</source>
        <translation>a taxa de quadros de um {format} deve estar entre 1 e {most} fps, recebido {fps}</translation>
    </message>
    <message>
        <source>cannot write {path}: no such folder {folder}</source>
        <translation>não é possível gravar {path}: a pasta {folder} não existe</translation>
    </message>
    <message>
        <source>cannot write {path}: permission denied or not a file</source>
        <translation>não é possível gravar {path}: permissão negada ou não é um arquivo</translation>
    </message>
</context>
</TS>
