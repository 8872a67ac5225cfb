<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.requests_panels</name>
    <message>
        <source>none</source>
        <translation>nenhuma</translation>
    </message>
    <message>
        <source>hash {hash}</source>
        <translation>hash {hash}</translation>
    </message>
    <message>
        <source>no hash (not full, or not registered for reuse)</source>
        <translation>sem hash (não está cheio, ou não foi registrado para reúso)</translation>
    </message>
    <message>
        <source>free, rows kept for reuse</source>
        <translation>livre, linhas guardadas para reúso</translation>
    </message>
    <message>
        <source>free</source>
        <translation>livre</translation>
    </message>
    <message>
        <source>{n} reference(s)</source>
        <translation>{n} referência(s)</translation>
    </message>
    <message>
        <source>#{block}: {state} · held by request(s) {holders} · {filled}/{size} slots · {hash}</source>
        <translation>#{block}: {state} · ocupado pela(s) requisição(ões) {holders} · {filled}/{size} slots · {hash}</translation>
    </message>
    <message>
        <source> · tokens: “{text}”</source>
        <translation> · tokens: “{text}”</translation>
    </message>
    <message>
        <source>each cell is one physical block of the pool: its B slots (filled in its holder&apos;s colour), its id #b</source>
        <translation>cada célula é um bloco físico do pool: seus B slots (preenchidos na cor do dono), seu id #b</translation>
    </message>
    <message>
        <source>×N: N requests hold it (shared by prefix caching); the stripes on its left edge are its holders</source>
        <translation>×N: N requisições o ocupam (compartilhado pela cache de prefixos); as faixas na borda esquerda são seus donos</translation>
    </message>
    <message>
        <source>dashed and dimmed: free, but its rows are kept and can still be found by hash (cached)</source>
        <translation>tracejado e apagado: livre, mas suas linhas são guardadas e ainda podem ser achadas pelo hash (em cache)</translation>
    </message>
    <message>
        <source>L j: the block is logical block j of the request chosen above</source>
        <translation>L j: o bloco é o bloco lógico j da requisição escolhida acima</translation>
    </message>
    <message>
        <source>&lt;b style=&apos;color:{accent}&apos;&gt;×N&lt;/b&gt; shared · &lt;span style=&apos;color:{accent}&apos;&gt;gold: hit&lt;/span&gt; · bold: new/written · dashed: cached · &lt;span style=&apos;color:{error}&apos;&gt;evict(ed)&lt;/span&gt; · L j: logical block</source>
        <translation>&lt;b style=&apos;color:{accent}&apos;&gt;×N&lt;/b&gt; compartilhado · &lt;span style=&apos;color:{accent}&apos;&gt;dourado: acerto&lt;/span&gt; · grosso: novo/escrito · tracejado: em cache · &lt;span style=&apos;color:{error}&apos;&gt;descarte&lt;/span&gt; · L j: bloco lógico</translation>
    </message>
    <message>
        <source>{model}: {n} requests · B = {b} · pool {pool} blocks · {schedule} · {reused} prompt rows reused ({hits} block hits) · TTFT: median of {repeats}</source>
        <translation>{model}: {n} requisições · B = {b} · pool de {pool} blocos · {schedule} · {reused} linhas do prompt reutilizadas ({hits} acertos de bloco) · TTFT: mediana de {repeats}</translation>
    </message>
    <message>
        <source>&lt;b style=&apos;color:{color}&apos;&gt;Request {n}&lt;/b&gt;</source>
        <translation>&lt;b style=&apos;color:{color}&apos;&gt;Requisição {n}&lt;/b&gt;</translation>
    </message>
    <message>
        <source>&lt;span style=&apos;color:{accent}&apos;&gt;{hits} block(s) found by hash&lt;/span&gt; ({reused} rows reused), {computed} rows computed</source>
        <translation>&lt;span style=&apos;color:{accent}&apos;&gt;{hits} bloco(s) achado(s) pelo hash&lt;/span&gt; ({reused} linhas reutilizadas), {computed} linhas calculadas</translation>
    </message>
    <message>
        <source>no block found by hash: all {n} prompt rows computed</source>
        <translation>nenhum bloco achado pelo hash: todas as {n} linhas do prompt calculadas</translation>
    </message>
    <message>
        <source>all {n} prompt rows computed (caching off)</source>
        <translation>todas as {n} linhas do prompt calculadas (sem cache)</translation>
    </message>
    <message>
        <source>{who} prefill: {found}. TTFT {on} with caching, {off} without{ratio}.</source>
        <translation>{who} prefill: {found}. TTFT {on} com cache, {off} sem{ratio}.</translation>
    </message>
    <message>
        <source>{who} decode: the row of token {token} goes into slot {slot} of its logical block {j} (physical #{b}).</source>
        <translation>{who} decode: a linha do token {token} vai para o slot {slot} do seu bloco lógico {j} (físico #{b}).</translation>
    </message>
    <message>
        <source>{who} finished: its {n} block(s) go back to the free list, {cached} keep their rows for reuse (cached).</source>
        <translation>{who} terminou: seu(s) {n} bloco(s) volta(m) para a lista livre, {cached} guarda(m) as linhas para reúso (em cache).</translation>
    </message>
    <message>
        <source>{who} finished: its {n} block(s) go back to the free list.</source>
        <translation>{who} terminou: seu(s) {n} bloco(s) volta(m) para a lista livre.</translation>
    </message>
    <message>
        <source>pool: {held} of {n} blocks held · {free} free</source>
        <translation>pool: {held} de {n} blocos ocupados · {free} livres</translation>
    </message>
    <message>
        <source> ({n} cached)</source>
        <translation> ({n} em cache)</translation>
    </message>
    <message>
        <source> · evictions so far {n}</source>
        <translation> · descartes até aqui {n}</translation>
    </message>
    <message>
        <source> · this step: {events}</source>
        <translation> · neste passo: {events}</translation>
    </message>
    <message>
        <source>press Run: each request&apos;s numbers, prefix caching off and on, appear here</source>
        <translation>aperte Executar: os números de cada requisição, sem e com cache de prefixos, aparecem aqui</translation>
    </message>
    <message>
        <source>the paged figure recomputed for the same rows with other block sizes: small blocks waste less of the last block, but a block is only shared once it is full, and the table has more entries</source>
        <translation>o valor paginado recalculado para as mesmas linhas com outros tamanhos de bloco: blocos pequenos desperdiçam menos no último bloco, mas um bloco só é compartilhado quando está cheio, e a tabela tem mais entradas</translation>
    </message>
    <message>
        <source>The same {n} requests, blocks of {b}, run with prefix caching off and on ({schedule}); TTFT is the median of {repeats} timed prefills, measured on this machine.</source>
        <translation>As mesmas {n} requisições, blocos de {b}, executadas sem e com cache de prefixos ({schedule}); o TTFT é a mediana de {repeats} prefills cronometrados, medidos nesta máquina.</translation>
    </message>
    <message>
        <source>Memory for these requests&apos; {rows} rows held at once (one slot = one token&apos;s K and V in every layer, {size}):</source>
        <translation>Memória para as {rows} linhas destas requisições guardadas ao mesmo tempo (um slot = K e V de um token em todas as camadas, {size}):</translation>
    </message>
    <message>
        <source>paged waste of these rows with other block sizes: {sizes}</source>
        <translation>desperdício paginado destas linhas com outros tamanhos de bloco: {sizes}</translation>
    </message>
    <message>
        <source>answers (with caching on): {answers}</source>
        <translation>respostas (com a cache ligada): {answers}</translation>
    </message>
</context>
</TS>
