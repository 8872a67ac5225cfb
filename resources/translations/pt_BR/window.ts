<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>window</name>
    <message>
        <source>kvsim — the KV cache, step by step</source>
        <translation>kvsim — a cache KV, passo a passo</translation>
    </message>
    <message>
        <source>starting the engine …</source>
        <translation>iniciando o motor …</translation>
    </message>
    <message>
        <source>click to dismiss</source>
        <translation>clique para fechar</translation>
    </message>
    <message>
        <source>Timeline</source>
        <translation>Linha do tempo</translation>
    </message>
    <message>
        <source>Costs so far</source>
        <translation>Custos até agora</translation>
    </message>
    <message>
        <source>Text (prompt = prefill, then one token per decode step)</source>
        <translation>Texto (prompt = prefill, depois um token por passo de decode)</translation>
    </message>
    <message>
        <source>All heads (selected layer)</source>
        <translation>Todas as cabeças (camada selecionada)</translation>
    </message>
    <message>
        <source>Save run…</source>
        <translation>Salvar execução…</translation>
    </message>
    <message>
        <source>Open run…</source>
        <translation>Abrir execução…</translation>
    </message>
    <message>
        <source>Lanes only</source>
        <translation>Só as lanes</translation>
    </message>
    <message>
        <source>Free-running lanes (each continues on its own choice)</source>
        <translation>Lanes livres (cada uma segue a própria escolha)</translation>
    </message>
    <message>
        <source>K/V error vs exact (lossy lanes)</source>
        <translation>Erro de K/V vs exato (lanes com perda)</translation>
    </message>
    <message>
        <source>Default layout</source>
        <translation>Disposição padrão</translation>
    </message>
    <message>
        <source>the KV cache</source>
        <translation>a cache KV</translation>
    </message>
    <message>
        <source>kvsim — {model} — {what}</source>
        <translation>kvsim — {model} — {what}</translation>
    </message>
    <message>
        <source>prompt: {n} tokens · press Step (→) or Play (Space) · Back (←) · Reset (Home) · F: lanes only</source>
        <translation>prompt: {n} tokens · aperte Avançar (→) ou Reproduzir (Espaço) · Voltar (←) · Recomeçar (Home) · F: só as lanes</translation>
    </message>
</context>
</TS>
