<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.chart_text</name>
    <message>
        <source>K/V rows computed, Σ</source>
        <translation>linhas K/V calculadas, Σ</translation>
    </message>
    <message>
        <source>time per step (ms)</source>
        <translation>tempo por passo (ms)</translation>
    </message>
    <message>
        <source>cache held (bytes)</source>
        <translation>cache ocupada (bytes)</translation>
    </message>
    <message>
        <source>K/V rows computed so far, summed over the steps. Without a cache step t recomputes all t rows, so
the sum grows as Σt = n(n+1)/2 (less the prompt&apos;s P(P−1)/2, which the prefill does at once);
with a cache each step computes one new row: n rows in all.</source>
        <translation>linhas K/V calculadas até agora, somadas ao longo dos passos. Sem cache, o passo t recalcula as t linhas,
então a soma cresce como Σt = n(n+1)/2 (menos o P(P−1)/2 do prompt, que o prefill faz de uma vez);
com cache, cada passo calcula uma linha nova: n linhas ao todo.</translation>
    </message>
    <message>
        <source>floating-point operations so far, summed over the steps (counted from the model&apos;s shapes)</source>
        <translation>operações de ponto flutuante até agora, somadas ao longo dos passos (contadas a partir das formas do modelo)</translation>
    </message>
    <message>
        <source>measured wall time of each step&apos;s forward pass; bars: the fastest and slowest of its repeats</source>
        <translation>tempo de relógio medido do forward de cada passo; barras: a mais rápida e a mais lenta de suas repetições</translation>
    </message>
    <message>
        <source>bytes of K and V each lane holds after each step (all layers): a window lane&apos;s curve flattens</source>
        <translation>bytes de K e V que cada lane guarda após cada passo (todas as camadas): a curva de uma lane com janela se achata</translation>
    </message>
    <message>
        <source>TTFT: time to first token — the measured time of the prefill step (prompt → first token)
ITL: inter-token latency — the time per generated token after the first (mean of the decode steps so far)
K/V rows: rows of K and V computed so far, summed over the steps
cache: bytes of K and V the lane holds now (all layers)
× the K/V rows: how many times more rows one lane computed than the other</source>
        <translation>TTFT: tempo até o primeiro token — o tempo medido do passo de prefill (prompt → primeiro token)
ITL: latência entre tokens — o tempo por token gerado depois do primeiro (média dos passos de decode até agora)
linhas K/V: linhas de K e V calculadas até agora, somadas ao longo dos passos
cache: bytes de K e V que a lane guarda agora (todas as camadas)
× as linhas K/V: quantas vezes mais linhas uma lane calculou que a outra</translation>
    </message>
    <message>
        <source>log scale</source>
        <translation>escala log</translation>
    </message>
    <message>
        <source>K/V rows</source>
        <translation>linhas K/V</translation>
    </message>
    <message>
        <source>no steps yet</source>
        <translation>nenhum passo ainda</translation>
    </message>
    <message>
        <source>{ratio}× the K/V rows</source>
        <translation>{ratio}× as linhas K/V</translation>
    </message>
</context>
</TS>
