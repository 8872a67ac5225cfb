<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>worker</name>
    <message>
        <source>bundled model {model} not available ({error}); using a random model</source>
        <translation>modelo embutido {model} indisponível ({error}); usando um modelo aleatório</translation>
    </message>
    <message>
        <source>could not load model {model}: {error}</source>
        <translation>não foi possível carregar o modelo {model}: {error}</translation>
    </message>
    <message>
        <source>no model is loaded</source>
        <translation>nenhum modelo carregado</translation>
    </message>
    <message>
        <source>could not start the run: {error}</source>
        <translation>não foi possível iniciar a execução: {error}</translation>
    </message>
    <message>
        <source>step {n} failed: {error}</source>
        <translation>o passo {n} falhou: {error}</translation>
    </message>
</context>
</TS>
