<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.requests_numbers</name>
    <message>
        <source>prompt tokens</source>
        <translation>tokens do prompt</translation>
    </message>
    <message>
        <source>the request&apos;s tokens after the chat template (or system prompt) was applied</source>
        <translation>os tokens da requisição depois de aplicado o template de chat (ou o prompt de sistema)</translation>
    </message>
    <message>
        <source>computed · off</source>
        <translation>calculadas · sem</translation>
    </message>
    <message>
        <source>prefill rows: K/V rows its prefill computed without prefix caching (all of them)</source>
        <translation>linhas do prefill: linhas K/V que o prefill calculou sem cache de prefixos (todas)</translation>
    </message>
    <message>
        <source>computed · on</source>
        <translation>calculadas · com</translation>
    </message>
    <message>
        <source>prefill rows: K/V rows its prefill computed with prefix caching: only what was not found</source>
        <translation>linhas do prefill: linhas K/V que o prefill calculou com cache de prefixos: só o que não foi achado</translation>
    </message>
    <message>
        <source>reused · on</source>
        <translation>reutilizadas · com</translation>
    </message>
    <message>
        <source>prompt rows taken from blocks already in the pool (hit blocks × B): not computed again</source>
        <translation>linhas do prompt tiradas de blocos já no pool (blocos com acerto × B): não calculadas de novo</translation>
    </message>
    <message>
        <source>hits / misses</source>
        <translation>acertos / faltas</translation>
    </message>
    <message>
        <source>with caching on: prompt blocks found by hash (hits) and blocks its prefill had to write (misses)</source>
        <translation>com a cache ligada: blocos do prompt achados pelo hash (acertos) e blocos que o prefill teve de escrever (faltas)</translation>
    </message>
    <message>
        <source>TTFT off, ms</source>
        <translation>TTFT sem, ms</translation>
    </message>
    <message>
        <source>time to first token without prefix caching: the median of the timed prefills</source>
        <translation>tempo até o primeiro token sem cache de prefixos: a mediana dos prefills cronometrados</translation>
    </message>
    <message>
        <source>min–max</source>
        <translation>mín–máx</translation>
    </message>
    <message>
        <source>the spread: the fastest and slowest of the timed prefills (off)</source>
        <translation>a dispersão: o mais rápido e o mais lento dos prefills cronometrados (sem)</translation>
    </message>
    <message>
        <source>TTFT on, ms</source>
        <translation>TTFT com, ms</translation>
    </message>
    <message>
        <source>time to first token with prefix caching: lookup + the rest of the prefill + first token</source>
        <translation>tempo até o primeiro token com cache de prefixos: busca + o resto do prefill + primeiro token</translation>
    </message>
    <message>
        <source>the spread: the fastest and slowest of the timed prefills (on)</source>
        <translation>a dispersão: o mais rápido e o mais lento dos prefills cronometrados (com)</translation>
    </message>
    <message>
        <source>on ÷ off</source>
        <translation>com ÷ sem</translation>
    </message>
    <message>
        <source>TTFT with caching ÷ TTFT without: below 1: the request&apos;s first token came sooner because its prefix was reused</source>
        <translation>TTFT com cache ÷ TTFT sem: abaixo de 1, o primeiro token da requisição veio antes porque seu prefixo foi reutilizado</translation>
    </message>
    <message>
        <source>blocks held</source>
        <translation>blocos ocupados</translation>
    </message>
    <message>
        <source>with caching on: blocks in its table when it finished (shared ones included)</source>
        <translation>com a cache ligada: blocos na sua tabela quando ela terminou (incluindo os compartilhados)</translation>
    </message>
    <message>
        <source>req {n}</source>
        <translation>req {n}</translation>
    </message>
    <message>
        <source>all</source>
        <translation>todas</translation>
    </message>
    <message>
        <source>sums over the requests (the ratio: total TTFT on ÷ total TTFT off)</source>
        <translation>somas sobre as requisições (a razão: TTFT total com ÷ TTFT total sem)</translation>
    </message>
    <message>
        <source>memory for these requests&apos; rows held at once: the bar is what each scheme reserves, the solid part the rows really held, the hatched part reserved but empty</source>
        <translation>memória para as linhas destas requisições guardadas ao mesmo tempo: a barra é o que cada esquema reserva, a parte cheia as linhas realmente guardadas, a parte hachurada reservada mas vazia</translation>
    </message>
    <message>
        <source>contiguous, preallocated to {n} tokens</source>
        <translation>contígua, pré-alocada para {n} tokens</translation>
    </message>
    <message>
        <source>contiguous, exact (length known in advance)</source>
        <translation>contígua, exata (tamanho conhecido de antemão)</translation>
    </message>
    <message>
        <source>paged, blocks of {b}</source>
        <translation>paginada, blocos de {b}</translation>
    </message>
    <message>
        <source>paged, shared prefix counted once</source>
        <translation>paginada, prefixo compartilhado contado uma vez</translation>
    </message>
    <message>
        <source>{scheme}: {slots} slots ({size}) · saves {saved}</source>
        <translation>{scheme}: {slots} slots ({size}) · economiza {saved}</translation>
    </message>
    <message>
        <source>{scheme}: {slots} slots ({size}) · {percent}% wasted</source>
        <translation>{scheme}: {slots} slots ({size}) · {percent}% desperdiçado</translation>
    </message>
</context>
</TS>
