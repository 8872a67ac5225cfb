<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.policy_text</name>
    <message>
        <source>no cache</source>
        <translation>sem cache</translation>
    </message>
    <message>
        <source>KV cache</source>
        <translation>cache KV</translation>
    </message>
    <message>
        <source>paged KV cache</source>
        <translation>cache KV paginada</translation>
    </message>
    <message>
        <source>sliding window</source>
        <translation>janela deslizante</translation>
    </message>
    <message>
        <source>attention sinks + window</source>
        <translation>sinks de atenção + janela</translation>
    </message>
    <message>
        <source>INT{b} cache (g{g}, r{r})</source>
        <translation>cache INT{b} (g{g}, r{r})</translation>
    </message>
    <message>
        <source>recomputes all rows, every step</source>
        <translation>recalcula todas as linhas, a cada passo</translation>
    </message>
    <message>
        <source>computes the new row, reads the rest</source>
        <translation>calcula a linha nova, lê as demais</translation>
    </message>
    <message>
        <source>rows in blocks of {b} slots, read through a block table</source>
        <translation>linhas em blocos de {b} posições, lidas por uma tabela de blocos</translation>
    </message>
    <message>
        <source>keeps the last {w} rows; older ones are evicted</source>
        <translation>guarda as últimas {w} linhas; as mais antigas são descartadas</translation>
    </message>
    <message>
        <source>keeps the first {s} rows forever and the last {w}; the rows between are evicted</source>
        <translation>guarda para sempre as primeiras {s} linhas e as últimas {w}; as do meio são descartadas</translation>
    </message>
    <message>
        <source>keys per channel, values per token, {b}-bit codes in groups of {g}; the last {r} tokens in full precision</source>
        <translation>chaves por canal, valores por token, códigos de {b} bits em grupos de {g}; os últimos {r} tokens em precisão plena</translation>
    </message>
    <message>
        <source>keys per channel, values per token, {b}-bit codes in groups of {g}; only an unfinished group in full precision</source>
        <translation>chaves por canal, valores por token, códigos de {b} bits em grupos de {g}; só um grupo incompleto em precisão plena</translation>
    </message>
</context>
</TS>
