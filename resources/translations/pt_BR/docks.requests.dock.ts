<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.requests</name>
    <message>
        <source>hover a block: its tokens, hash, reference count and holders</source>
        <translation>passe o mouse sobre um bloco: seus tokens, hash, contagem de referências e donos</translation>
    </message>
    <message>
        <source>Run: the request list goes through one paged pool, prefix caching off and then on</source>
        <translation>Executar: a lista de requisições passa por um pool paginado, sem e depois com cache de prefixos</translation>
    </message>
    <message>
        <source>Blocks</source>
        <translation>Blocos</translation>
    </message>
    <message>
        <source>Off vs on</source>
        <translation>Sem × com</translation>
    </message>
    <message>
        <source>per request: prefill rows, hits, measured TTFT without and with prefix caching; memory of 3 allocation schemes</source>
        <translation>por requisição: linhas do prefill, acertos, TTFT medido sem e com cache de prefixos; memória de 3 esquemas de alocação</translation>
    </message>
    <message>
        <source>Request list</source>
        <translation>Lista de requisições</translation>
    </message>
    <message>
        <source>edit the requests (one prompt per line) and the system prompt they share</source>
        <translation>edite as requisições (um prompt por linha) e o prompt de sistema que elas compartilham</translation>
    </message>
    <message>
        <source>the demo request lists could not be read: {error}</source>
        <translation>não foi possível ler as listas de requisições de demonstração: {error}</translation>
    </message>
    <message>
        <source>back to the previous request&apos;s prefill (Shift+←)</source>
        <translation>voltar ao prefill da requisição anterior (Shift+←)</translation>
    </message>
    <message>
        <source>one step back (←)</source>
        <translation>um passo para trás (←)</translation>
    </message>
    <message>
        <source>the steps of the run: each request&apos;s prefill, its decode steps, and its finish (← →)</source>
        <translation>os passos da execução: o prefill de cada requisição, seus passos de decode e seu fim (← →)</translation>
    </message>
    <message>
        <source>one step on (→)</source>
        <translation>um passo adiante (→)</translation>
    </message>
    <message>
        <source>on to the next request&apos;s prefill (Shift+→)</source>
        <translation>adiante, ao prefill da próxima requisição (Shift+→)</translation>
    </message>
    <message>
        <source>step {i} / {n}</source>
        <translation>passo {i} / {n}</translation>
    </message>
    <message>
        <source>prefix caching on</source>
        <translation>com cache de prefixos</translation>
    </message>
    <message>
        <source>prefix caching off</source>
        <translation>sem cache de prefixos</translation>
    </message>
    <message>
        <source>which of the two runs the blocks show: the same requests with prefix caching on or off</source>
        <translation>qual das duas execuções os blocos mostram: as mesmas requisições com ou sem cache de prefixos</translation>
    </message>
    <message>
        <source>block table of:</source>
        <translation>tabela de blocos de:</translation>
    </message>
    <message>
        <source>whose block table is drawn below (and marked L j in the grid)</source>
        <translation>de quem é a tabela de blocos desenhada abaixo (e marcada L j na grade)</translation>
    </message>
    <message>
        <source>the default demo list</source>
        <translation>a lista de demonstração padrão</translation>
    </message>
    <message>
        <source>the request list is empty: write one prompt per line in the &apos;Request list&apos; tab</source>
        <translation>a lista de requisições está vazia: escreva um prompt por linha na aba “Lista de requisições”</translation>
    </message>
    <message>
        <source>{n} requests</source>
        <translation>{n} requisições</translation>
    </message>
    <message>
        <source>running {what} twice through one paged pool (prefix caching off, then on), timing each prefill…</source>
        <translation>executando {what} duas vezes por um pool paginado (sem e depois com cache de prefixos), cronometrando cada prefill…</translation>
    </message>
    <message>
        <source>the requests could not run: {error}</source>
        <translation>não foi possível executar as requisições: {error}</translation>
    </message>
    <message>
        <source>no model is loaded yet: press Run when it is</source>
        <translation>nenhum modelo carregado ainda: aperte Executar quando estiver</translation>
    </message>
    <message>
        <source>the step&apos;s request</source>
        <translation>a requisição do passo</translation>
    </message>
    <message>
        <source>request {n}</source>
        <translation>requisição {n}</translation>
    </message>
</context>
</TS>
