<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.timeline</name>
    <message>
        <source>step: the step under the cursor (step 0 is the prefill: the whole prompt at once; each later
step decodes one token) · K/V rows: rows in each K and V table now (the newest token has
none until the next step feeds it) · tokens: the text so far (prompt + generated)</source>
        <translation>passo: o passo sob o cursor (o passo 0 é o prefill: o prompt inteiro de uma vez; cada passo
seguinte decodifica um token) · linhas K/V: linhas em cada tabela K e V agora (o token mais novo
não tem nenhuma até o próximo passo processá-lo) · tokens: o texto até agora (prompt + gerado)</translation>
    </message>
    <message>
        <source>PREFILL: the prompt in one parallel step (its time is the TTFT) · DECODE: one token per step</source>
        <translation>PREFILL: o prompt em um só passo paralelo (seu tempo é o TTFT) · DECODE: um token por passo</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>Cancelar</translation>
    </message>
    <message>
        <source>READY</source>
        <translation>PRONTO</translation>
    </message>
    <message>
        <source>prompt: {n} tokens · step — / {steps}</source>
        <translation>prompt: {n} tokens · passo — / {steps}</translation>
    </message>
    <message>
        <source>step {step} / {last} · {rows} K/V rows · {tokens} tokens</source>
        <translation>passo {step} / {last} · {rows} linhas K/V · {tokens} tokens</translation>
    </message>
    <message>
        <source>{title}: layer {done}/{total}</source>
        <translation>{title}: camada {done}/{total}</translation>
    </message>
</context>
</TS>
