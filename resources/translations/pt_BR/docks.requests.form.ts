<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.requests_form</name>
    <message>
        <source>(edited list)</source>
        <translation>(lista editada)</translation>
    </message>
    <message>
        <source>block size B: token slots per block. Small blocks waste less of the last block; large ones mean fewer, bigger table entries and fewer full blocks to share</source>
        <translation>tamanho de bloco B: slots de token por bloco. Blocos pequenos desperdiçam menos no último bloco; grandes significam entradas de tabela menos numerosas e maiores, e menos blocos cheios para compartilhar</translation>
    </message>
    <message>
        <source>blocks in the shared pool. &apos;all fit&apos; gives room for every request at once (nothing is evicted); a smaller pool makes finished requests&apos; cached blocks be evicted, least recently used first</source>
        <translation>blocos no pool compartilhado. “cabe tudo” dá espaço para todas as requisições de uma vez (nada é descartado); um pool menor faz os blocos em cache de requisições terminadas serem descartados, os usados há mais tempo primeiro</translation>
    </message>
    <message>
        <source>sequential: one request after another · interleaved: all prefill in turn, then decode round-robin, so their blocks are live at the same time and shared blocks count several holders</source>
        <translation>sequencial: uma requisição depois da outra · intercalado: todas fazem o prefill em sequência e depois o decode em rodízio, então seus blocos estão vivos ao mesmo tempo e os blocos compartilhados contam vários donos</translation>
    </message>
    <message>
        <source>run the request list twice through one paged pool — prefix caching off, then on — and measure each request&apos;s TTFT (on the worker thread)</source>
        <translation>executar a lista de requisições duas vezes por um pool paginado — sem e depois com cache de prefixos — e medir o TTFT de cada requisição (na thread de trabalho)</translation>
    </message>
    <message>
        <source>pool</source>
        <translation>pool</translation>
    </message>
    <message>
        <source>all fit</source>
        <translation>cabe tudo</translation>
    </message>
    <message>
        <source>steps</source>
        <translation>passos</translation>
    </message>
    <message>
        <source>tokens each request generates (its first comes from the prefill)</source>
        <translation>tokens que cada requisição gera (o primeiro vem do prefill)</translation>
    </message>
    <message>
        <source>Run</source>
        <translation>Executar</translation>
    </message>
    <message>
        <source>Running…</source>
        <translation>Executando…</translation>
    </message>
    <message>
        <source>demo list:</source>
        <translation>lista de demonstração:</translation>
    </message>
    <message>
        <source>the bundled request lists (resources/requests): choosing one replaces the text below</source>
        <translation>as listas de requisições que vêm com o kvsim (em `resources/requests`): escolher uma substitui o texto abaixo</translation>
    </message>
    <message>
        <source>system prompt, shared by every request (empty: the model&apos;s own default, if its chat template has one):</source>
        <translation>prompt de sistema, compartilhado por todas as requisições (vazio: o padrão do próprio modelo, se o template de chat dele tiver um):</translation>
    </message>
    <message>
        <source>(none)</source>
        <translation>(nenhum)</translation>
    </message>
    <message>
        <source>every request starts with this text: its full blocks are what prefix caching reuses</source>
        <translation>toda requisição começa com este texto: seus blocos cheios são o que a cache de prefixos reutiliza</translation>
    </message>
    <message>
        <source>requests, one prompt per line:</source>
        <translation>requisições, um prompt por linha:</translation>
    </message>
    <message>
        <source>each line is one request (a user&apos;s question behind the shared system prompt)</source>
        <translation>cada linha é uma requisição (a pergunta de um usuário depois do prompt de sistema compartilhado)</translation>
    </message>
</context>
</TS>
