<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.tokens</name>
    <message>
        <source>candidates at step {step}: {candidates}</source>
        <translation>candidatos no passo {step}: {candidates}</translation>
    </message>
    <message>
        <source>position {pos}: {token} · prompt token (prefill)</source>
        <translation>posição {pos}: {token} · token do prompt (prefill)</translation>
    </message>
    <message>
        <source>position {pos}: {token} · prompt token (prefill) — not fed yet: no K/V row until the next step</source>
        <translation>posição {pos}: {token} · token do prompt (prefill) — ainda não entrou no modelo: sem linha K/V até o próximo passo</translation>
    </message>
    <message>
        <source>position {pos}: {token} · generated token</source>
        <translation>posição {pos}: {token} · token gerado</translation>
    </message>
    <message>
        <source>position {pos}: {token} · generated token — not fed yet: no K/V row until the next step</source>
        <translation>posição {pos}: {token} · token gerado — ainda não entrou no modelo: sem linha K/V até o próximo passo</translation>
    </message>
</context>
</TS>
