<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.lane_text</name>
    <message>
        <source>this step — what this lane&apos;s forward pass did to produce one token:
• K/V rows computed: rows of K and V computed this step (no cache: every row again; a KV cache: only the new token&apos;s)
• FLOP: floating-point operations of this step&apos;s forward (counted from the model&apos;s shapes: projections, q·Kᵀ, ·V, MLP, LM head)
• ms: measured wall time of this step&apos;s forward (the median when timed more than once)
• keys read: key positions the new token&apos;s query attended to
• cache rows, bytes: the K and V this lane holds after the step (all layers)
• recomputed vs first |Δ|: how far recomputed rows are from their first computation (0: the past never changes)
• |Δlogit|: the largest difference between this lane&apos;s next-token scores and the reference lane&apos;s
• KL: how far this lane&apos;s next-token distribution is from the reference&apos;s (Kullback–Leibler; 0 = identical)</source>
        <translation>este passo — o que o forward desta lane fez para produzir um token:
• linhas K/V calculadas: linhas de K e V calculadas neste passo (sem cache: todas de novo; com cache KV: só a do token novo)
• FLOP: operações de ponto flutuante do forward deste passo (contadas a partir das formas do modelo: projeções, q·Kᵀ, ·V, MLP, camada de saída)
• ms: tempo de relógio medido do forward deste passo (a mediana, quando medido mais de uma vez)
• chaves lidas: posições de chave que a query do token novo atendeu
• cache, linhas e bytes: o K e o V que esta lane guarda após o passo (todas as camadas)
• recálculo vs original |Δ|: o quanto as linhas recalculadas se afastam do primeiro cálculo (0: o passado nunca muda)
• |Δlogit|: a maior diferença entre as pontuações do próximo token desta lane e as da lane de referência
• KL: o quanto a distribuição do próximo token desta lane se afasta da de referência (Kullback–Leibler; 0 = idênticas)</translation>
    </message>
    <message>
        <source>{count} row</source>
        <translation>{count} linha</translation>
    </message>
    <message>
        <source>{count} rows</source>
        <translation>{count} linhas</translation>
    </message>
    <message>
        <source>this step: {count} K/V row computed</source>
        <translation>neste passo: {count} linha K/V calculada</translation>
    </message>
    <message>
        <source>this step: {count} K/V rows computed</source>
        <translation>neste passo: {count} linhas K/V calculadas</translation>
    </message>
    <message>
        <source>{done} of {total}</source>
        <translation>{done} de {total}</translation>
    </message>
    <message>
        <source>this step: {count} K/V rows computed so far</source>
        <translation>neste passo: {count} linhas K/V calculadas até agora</translation>
    </message>
    <message>
        <source>recomputed |Δ| ≤ {diff}</source>
        <translation>recálculo |Δ| ≤ {diff}</translation>
    </message>
    <message>
        <source>recomputed vs first |Δ| ≤ {diff}</source>
        <translation>recálculo vs original |Δ| ≤ {diff}</translation>
    </message>
    <message>
        <source>vs reference: |Δlogit| {logit} · KL {kl}</source>
        <translation>vs referência: |Δlogit| {logit} · KL {kl}</translation>
    </message>
    <message>
        <source>own choice differs</source>
        <translation>escolha própria difere</translation>
    </message>
    <message>
        <source>cache {rows} rows, {bytes}</source>
        <translation>cache {rows} linhas, {bytes}</translation>
    </message>
    <message>
        <source>nothing cached</source>
        <translation>nada na cache</translation>
    </message>
    <message>
        <source>cache {rows} rows · {bytes}</source>
        <translation>cache {rows} lin. · {bytes}</translation>
    </message>
    <message>
        <source>{n} keys</source>
        <translation>{n} chaves</translation>
    </message>
    <message>
        <source>{n} keys read</source>
        <translation>{n} chaves lidas</translation>
    </message>
    <message>
        <source>all {total} rows recomputed</source>
        <translation>todas as {total} linhas recalculadas</translation>
    </message>
    <message>
        <source>all {total} recomputed</source>
        <translation>todas as {total} recalculadas</translation>
    </message>
    <message>
        <source>all {total}</source>
        <translation>todas as {total}</translation>
    </message>
    <message>
        <source>{done} of {total} rows recomputed</source>
        <translation>{done} de {total} linhas recalculadas</translation>
    </message>
    <message>
        <source>{done} of {total} recomputed</source>
        <translation>{done} de {total} recalculadas</translation>
    </message>
    <message>
        <source>read from cache</source>
        <translation>lidas da cache</translation>
    </message>
    <message>
        <source>cached</source>
        <translation>na cache</translation>
    </message>
    <message>
        <source>earlier rows not recomputed</source>
        <translation>linhas anteriores não recalculadas</translation>
    </message>
    <message>
        <source>not recomputed</source>
        <translation>não recalculadas</translation>
    </message>
    <message>
        <source>Q is not cached</source>
        <translation>Q não fica na cache</translation>
    </message>
    <message>
        <source>not cached</source>
        <translation>fora da cache</translation>
    </message>
    <message>
        <source>K after RoPE</source>
        <translation>K após RoPE</translation>
    </message>
    <message>
        <source>{k} · kv head {kv_head} · {d} dims</source>
        <translation>{k} · cabeça kv {kv_head} · {d} dims</translation>
    </message>
    <message>
        <source>{k} · kv head {kv_head}</source>
        <translation>{k} · cabeça kv {kv_head}</translation>
    </message>
    <message>
        <source>q · head {head}</source>
        <translation>q · cabeça {head}</translation>
    </message>
    <message>
        <source>V · layer {layer}</source>
        <translation>V · camada {layer}</translation>
    </message>
    <message>
        <source>V · L{layer}</source>
        <translation>V · C{layer}</translation>
    </message>
    <message>
        <source>attention of head {head} over keys</source>
        <translation>atenção da cabeça {head} sobre as chaves</translation>
    </message>
    <message>
        <source>attention · head {head}</source>
        <translation>atenção · cabeça {head}</translation>
    </message>
    <message>
        <source>attention</source>
        <translation>atenção</translation>
    </message>
    <message>
        <source>K − exact · kv head {kv_head} · ±{error}</source>
        <translation>K − exato · cabeça kv {kv_head} · ±{error}</translation>
    </message>
    <message>
        <source>K − exact · ±{error}</source>
        <translation>K − exato · ±{error}</translation>
    </message>
    <message>
        <source>K − exact</source>
        <translation>K − exato</translation>
    </message>
    <message>
        <source>V − exact · layer {layer}</source>
        <translation>V − exato · camada {layer}</translation>
    </message>
    <message>
        <source>V − exact</source>
        <translation>V − exato</translation>
    </message>
    <message>
        <source>K: the keys this lane holds, one row per token, the {d} dimensions of kv head {kv_head}. Stored after RoPE: each key is already rotated by its position, so a cached key is used as it is. Dim rows were read from the cache, bright rows computed this step.</source>
        <translation>K: as chaves que esta lane guarda, uma linha por token, as {d} dimensões da cabeça kv {kv_head}. Guardadas após RoPE: cada chave já está girada pela sua posição, então uma chave da cache é usada como está. Linhas esmaecidas foram lidas da cache; linhas vivas, calculadas neste passo.</translation>
    </message>
    <message>
        <source>q: the query rows of head {head} this lane computed this step. Q is never cached: the new token&apos;s query (bright) is what reads the cache — it meets every stored key in q·Kᵀ. Also after RoPE.</source>
        <translation>q: as linhas de query da cabeça {head} que esta lane calculou neste passo. Q nunca vai para a cache: a query do token novo (viva) é o que lê a cache — ela encontra cada chave guardada em q·Kᵀ. Também após RoPE.</translation>
    </message>
    <message>
        <source>K: the keys this lane holds, one row per token, the {d} dimensions of kv head {kv_head}. GPT-2 has no RoPE: positions were added to the input as learned embeddings. Dim rows were read from the cache, bright rows computed this step.</source>
        <translation>K: as chaves que esta lane guarda, uma linha por token, as {d} dimensões da cabeça kv {kv_head}. O GPT-2 não tem RoPE: as posições foram somadas à entrada como embeddings aprendidos. Linhas esmaecidas foram lidas da cache; linhas vivas, calculadas neste passo.</translation>
    </message>
    <message>
        <source>q: the query rows of head {head} this lane computed this step. Q is never cached: the new token&apos;s query (bright) is what reads the cache — it meets every stored key in q·Kᵀ.</source>
        <translation>q: as linhas de query da cabeça {head} que esta lane calculou neste passo. Q nunca vai para a cache: a query do token novo (viva) é o que lê a cache — ela encontra cada chave guardada em q·Kᵀ.</translation>
    </message>
    <message>
        <source>V: the values of kv head {kv_head}; the attention row weights them and the sum is this head&apos;s output.</source>
        <translation>V: os valores da cabeça kv {kv_head}; a linha de atenção os pondera e a soma é a saída desta cabeça.</translation>
    </message>
    <message>
        <source>attention: softmax(q·Kᵀ/√d) of each query row over the keys it could see (colour ∝ √p). Hatched: masked, a future position. Cross-hatched: not seen by this lane (outside its window, or evicted).</source>
        <translation>atenção: softmax(q·Kᵀ/√d) de cada linha de query sobre as chaves que ela podia ver (cor ∝ √p). Hachurado: mascarado, uma posição futura. Quadriculado: não visto por esta lane (fora da janela dela, ou descartado).</translation>
    </message>
</context>
</TS>
