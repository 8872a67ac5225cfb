<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>animation</name>
    <message>
        <source>slow</source>
        <translation>lenta</translation>
    </message>
    <message>
        <source>normal</source>
        <translation>normal</translation>
    </message>
    <message>
        <source>fast</source>
        <translation>rápida</translation>
    </message>
    <message>
        <source>instant</source>
        <translation>instantânea</translation>
    </message>
</context>
<context>
    <name>app</name>
    <message>
        <source>unexpected error: {error} — the app may show something stale; Reset (Home) starts the run afresh</source>
        <translation>erro inesperado: {error} — o app pode mostrar algo desatualizado; Recomeçar (Home) inicia a execução de novo</translation>
    </message>
</context>
<context>
    <name>appearance</name>
    <message>
        <source>Theme</source>
        <translation>Tema</translation>
    </message>
    <message>
        <source>dark</source>
        <translation>escuro</translation>
    </message>
    <message>
        <source>light</source>
        <translation>claro</translation>
    </message>
    <message>
        <source>system (follow the OS)</source>
        <translation>sistema (segue o SO)</translation>
    </message>
</context>
<context>
    <name>controller</name>
    <message>
        <source>loading model {model} …</source>
        <translation>carregando o modelo {model} …</translation>
    </message>
    <message>
        <source>free-running lanes: each continues on its own choice — a new live run</source>
        <translation>faixas livres: cada uma segue a própria escolha — uma nova execução ao vivo</translation>
    </message>
    <message>
        <source>lockstep lanes: every lane continues on the reference&apos;s token — a new live run</source>
        <translation>faixas em sincronia: todas seguem o token da referência — uma nova execução ao vivo</translation>
    </message>
    <message>
        <source>an opened run is for browsing: press Reset (Home) to start a live run</source>
        <translation>uma execução aberta é só para consulta: aperte Recomeçar (Home) para iniciar uma execução ao vivo</translation>
    </message>
    <message>
        <source>this run cannot continue: press Reset (Home) to start a live run</source>
        <translation>esta execução não pode continuar: aperte Recomeçar (Home) para iniciar uma execução ao vivo</translation>
    </message>
    <message>
        <source>the model&apos;s context of {n} tokens is full</source>
        <translation>o contexto do modelo, de {n} tokens, está cheio</translation>
    </message>
    <message>
        <source>nothing to save yet: run a step first</source>
        <translation>nada para salvar ainda: execute um passo primeiro</translation>
    </message>
    <message>
        <source>could not save {path}: {error}</source>
        <translation>não foi possível salvar {path}: {error}</translation>
    </message>
    <message>
        <source>saved {n} steps to {path}</source>
        <translation>{n} passos salvos em {path}</translation>
    </message>
    <message>
        <source>could not open {error}</source>
        <translation>não foi possível abrir {error}</translation>
    </message>
    <message>
        <source>could not open {path}: {error}</source>
        <translation>não foi possível abrir {path}: {error}</translation>
    </message>
    <message>
        <source>opened {path}: {n} steps of {model} — browse with ← →; Reset (Home) starts a live run on the loaded model</source>
        <translation>aberto {path}: {n} passos de {model} — navegue com ← →; Recomeçar (Home) inicia uma execução ao vivo no modelo carregado</translation>
    </message>
    <message>
        <source>opened {path}: {n} requests of {model} — shown in the Requests view (B)</source>
        <translation>aberto {path}: {n} requisições de {model} — mostradas na vista Requisições (B)</translation>
    </message>
    <message>
        <source>prefill cancelled — nothing was kept of it; Step (→) runs it again</source>
        <translation>prefill cancelado — nada dele foi guardado; Avançar (→) o executa de novo</translation>
    </message>
    <message>
        <source>step {n} cancelled — nothing was kept of it; Step (→) runs it again</source>
        <translation>passo {n} cancelado — nada dele foi guardado; Avançar (→) o executa de novo</translation>
    </message>
    <message>
        <source>the model produced its end-of-sequence token (its answer ends here); Step (→) continues anyway</source>
        <translation>o modelo produziu seu token de fim de sequência (a resposta termina aqui); Avançar (→) continua mesmo assim</translation>
    </message>
</context>
<context>
    <name>dialogs</name>
    <message>
        <source>Open a checkpoint (its config.json) or a .gguf file</source>
        <translation>Abrir um checkpoint (seu config.json) ou um arquivo .gguf</translation>
    </message>
    <message>
        <source>Models (config.json *.gguf);;All files (*)</source>
        <translation>Modelos (config.json *.gguf);;Todos os arquivos (*)</translation>
    </message>
    <message>
        <source>Save run</source>
        <translation>Salvar execução</translation>
    </message>
    <message>
        <source>kvsim runs (*.kvsim)</source>
        <translation>execuções do kvsim (*.kvsim)</translation>
    </message>
    <message>
        <source>Open run</source>
        <translation>Abrir execução</translation>
    </message>
    <message>
        <source>kvsim runs (*.kvsim);;all files (*)</source>
        <translation>execuções do kvsim (*.kvsim);;todos os arquivos (*)</translation>
    </message>
</context>
<context>
    <name>docks</name>
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
        <source>Text</source>
        <translation>Texto</translation>
    </message>
    <message>
        <source>Memory: the KV cache bill</source>
        <translation>Memória: a conta do KV cache</translation>
    </message>
    <message>
        <source>Memory: context 1k → 1M</source>
        <translation>Memória: contexto de 1k a 1M</translation>
    </message>
    <message>
        <source>Roofline: compute-bound or memory-bound</source>
        <translation>Roofline: limitado por cálculo ou por memória</translation>
    </message>
    <message>
        <source>Requests: paged blocks and prefix caching</source>
        <translation>Requisições: blocos paginados e prefix caching</translation>
    </message>
    <message>
        <source>Requests: paged blocks</source>
        <translation>Requisições: blocos paginados</translation>
    </message>
    <message>
        <source>Requests: prefix caching off vs on</source>
        <translation>Requisições: prefix caching desligado e ligado</translation>
    </message>
    <message>
        <source>Requests: continuous batching</source>
        <translation>Requisições: lotes contínuos</translation>
    </message>
    <message>
        <source>the engine is still starting</source>
        <translation>o motor ainda está iniciando</translation>
    </message>
</context>
<context>
    <name>export</name>
    <message>
        <source>Export for slides</source>
        <translation>Exportar para slides</translation>
    </message>
    <message>
        <source>Window as PNG…</source>
        <translation>Janela como PNG…</translation>
    </message>
    <message>
        <source>Picture of a view (PNG 1×/2×, SVG)…</source>
        <translation>Imagem de uma vista (PNG 1×/2×, SVG)…</translation>
    </message>
    <message>
        <source>Run as GIF or MP4…</source>
        <translation>Execução como GIF ou MP4…</translation>
    </message>
    <message>
        <source>Figures per step as CSV…</source>
        <translation>Números por passo como CSV…</translation>
    </message>
    <message>
        <source>Web page (the run, for any browser)…</source>
        <translation>Página web (a execução, para qualquer navegador)…</translation>
    </message>
    <message>
        <source>the whole window</source>
        <translation>a janela inteira</translation>
    </message>
    <message>
        <source>the lanes</source>
        <translation>as faixas</translation>
    </message>
    <message>
        <source>lane {name}</source>
        <translation>faixa {name}</translation>
    </message>
    <message>
        <source>no view named {name} (there are: {there})</source>
        <translation>nenhuma vista chamada {name} (existem: {there})</translation>
    </message>
    <message>
        <source>{name} has no vector form: export it as PNG</source>
        <translation>{name} não tem forma vetorial: exporte como PNG</translation>
    </message>
    <message>
        <source>unknown picture kind {kind}</source>
        <translation>tipo de imagem desconhecido {kind}</translation>
    </message>
    <message>
        <source>a step is being computed: export when it is done</source>
        <translation>um passo está sendo calculado: exporte quando terminar</translation>
    </message>
    <message>
        <source>the steps must lie in 0..{last}, got {first_asked}..{last_asked}</source>
        <translation>os passos devem estar em 0..{last}, recebido {first_asked}..{last_asked}</translation>
    </message>
    <message>
        <source>Writing {n} frames to {file} …</source>
        <translation>Gravando {n} quadros em {file} …</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>Cancelar</translation>
    </message>
    <message>
        <source>Export</source>
        <translation>Exportar</translation>
    </message>
    <message>
        <source>wrote {path}: {n} frames, {seconds} s</source>
        <translation>{path} gravado: {n} quadros, {seconds} s</translation>
    </message>
    <message>
        <source>nothing to export yet: run a step first</source>
        <translation>nada para exportar ainda: avance um passo primeiro</translation>
    </message>
    <message>
        <source>export cancelled</source>
        <translation>exportação cancelada</translation>
    </message>
    <message>
        <source>export failed: {error}</source>
        <translation>a exportação falhou: {error}</translation>
    </message>
    <message>
        <source>Save {view} as {format}</source>
        <translation>Salvar {view} como {format}</translation>
    </message>
    <message>
        <source>Save the figures per step</source>
        <translation>Salvar os números por passo</translation>
    </message>
    <message>
        <source>Save the run as a web page</source>
        <translation>Salvar a execução como página web</translation>
    </message>
    <message>
        <source>wrote {path}; left out to stay under {mb} MB: {what}</source>
        <translation>{path} gravado; deixado de fora para ficar abaixo de {mb} MB: {what}</translation>
    </message>
    <message>
        <source>Save the run as {format}</source>
        <translation>Salvar a execução como {format}</translation>
    </message>
    <message>
        <source>wrote {path}</source>
        <translation>{path} gravado</translation>
    </message>
</context>
<context>
    <name>export_dialogs</name>
    <message>
        <source>PNG (screen pixels)</source>
        <translation>PNG (pixels da tela)</translation>
    </message>
    <message>
        <source>PNG at 2× pixels (sharp on 4K)</source>
        <translation>PNG com 2× pixels (nítido em 4K)</translation>
    </message>
    <message>
        <source>SVG (vector, plots only)</source>
        <translation>SVG (vetorial, só gráficos)</translation>
    </message>
    <message>
        <source>slow</source>
        <translation>lenta</translation>
    </message>
    <message>
        <source>normal</source>
        <translation>normal</translation>
    </message>
    <message>
        <source>fast</source>
        <translation>rápida</translation>
    </message>
    <message>
        <source>Export a picture</source>
        <translation>Exportar uma imagem</translation>
    </message>
    <message>
        <source>view</source>
        <translation>vista</translation>
    </message>
    <message>
        <source>as</source>
        <translation>como</translation>
    </message>
    <message>
        <source>instant (one frame per step)</source>
        <translation>instantânea (um quadro por passo)</translation>
    </message>
    <message>
        <source>{speed} ({seconds} s per step)</source>
        <translation>{speed} ({seconds} s por passo)</translation>
    </message>
    <message>
        <source>Export the run as GIF or MP4</source>
        <translation>Exportar a execução como GIF ou MP4</translation>
    </message>
    <message>
        <source>MP4 (H.264: small, for slides and video)</source>
        <translation>MP4 (H.264: pequeno, para slides e vídeo)</translation>
    </message>
    <message>
        <source>GIF (plays anywhere, larger)</source>
        <translation>GIF (abre em qualquer lugar, maior)</translation>
    </message>
    <message>
        <source>format</source>
        <translation>formato</translation>
    </message>
    <message>
        <source>to</source>
        <translation>até</translation>
    </message>
    <message>
        <source>steps (0 = prefill)</source>
        <translation>passos (0 = prefill)</translation>
    </message>
    <message>
        <source>as the window ({size})</source>
        <translation>como a janela ({size})</translation>
    </message>
    <message>
        <source>size</source>
        <translation>tamanho</translation>
    </message>
    <message>
        <source>frames per second</source>
        <translation>quadros por segundo</translation>
    </message>
    <message>
        <source>animation</source>
        <translation>animação</translation>
    </message>
    <message>
        <source>the whole window</source>
        <translation>a janela inteira</translation>
    </message>
    <message>
        <source>the lanes only</source>
        <translation>só as faixas</translation>
    </message>
    <message>
        <source>film</source>
        <translation>filmar</translation>
    </message>
    <message>
        <source>{n} frames ({k} per step), {seconds} s</source>
        <translation>{n} quadros ({k} por passo), {seconds} s</translation>
    </message>
</context>
<context>
    <name>export_images</name>
    <message>
        <source>could not write {path}</source>
        <translation>não foi possível gravar {path}</translation>
    </message>
    <message>
        <source>the SVG exporter failed: {error}</source>
        <translation>o exportador de SVG falhou: {error}</translation>
    </message>
    <message>
        <source>no such folder: {folder}</source>
        <translation>a pasta não existe: {folder}</translation>
    </message>
    <message>
        <source>cannot write into {folder} (permission denied)</source>
        <translation>não é possível gravar em {folder} (permissão negada)</translation>
    </message>
</context>
<context>
    <name>export_movie</name>
    <message>
        <source>the file must end in .gif or .mp4, got {name}</source>
        <translation>o arquivo deve terminar em .gif ou .mp4, recebido {name}</translation>
    </message>
    <message>
        <source>the size must be between {smallest} and {largest}, got {size}</source>
        <translation>o tamanho deve estar entre {smallest} e {largest}, recebido {size}</translation>
    </message>
    <message>
        <source>an MP4 needs ffmpeg, which kvsim&apos;s video extra brings: {command}</source>
        <translation>um MP4 precisa do ffmpeg, que vem com o extra video do kvsim: {command}</translation>
    </message>
    <message>
        <source>an MP4&apos;s width and height must be even (H.264, yuv420p), got {size}</source>
        <translation>a largura e a altura de um MP4 devem ser pares (H.264, yuv420p), recebido {size}</translation>
    </message>
    <message>
        <source>the frame rate of a {format} must be between 1 and {most} fps, got {fps}</source>
        <translation>a taxa de quadros de um {format} deve estar entre 1 e {most} fps, recebido {fps}</translation>
    </message>
    <message>
        <source>cannot write {path}: no such folder {folder}</source>
        <translation>não é possível gravar {path}: a pasta {folder} não existe</translation>
    </message>
    <message>
        <source>cannot write {path}: permission denied or not a file</source>
        <translation>não é possível gravar {path}: permissão negada ou não é um arquivo</translation>
    </message>
    <message>
        <source>{n} frames is more than an export makes ({most}): fewer steps, a faster speed or a lower frame rate</source>
        <translation>{n} quadros é mais do que uma exportação faz ({most}): menos passos, uma velocidade maior ou uma taxa de quadros menor</translation>
    </message>
</context>
<context>
    <name>families</name>
    <message>
        <source>hybrid linear attention (Qwen3-Next)</source>
        <translation>atenção linear híbrida (Qwen3-Next)</translation>
    </message>
    <message>
        <source>{linear} of {layers} layers are Gated DeltaNet, each holding a fixed-size recurrent state; the rest are attention, with a growing K/V cache</source>
        <translation>{linear} de {layers} camadas são Gated DeltaNet, cada uma com um estado recorrente de tamanho fixo; as demais são de atenção, com um KV cache que cresce</translation>
    </message>
    <message>
        <source>cross-layer KV sharing (CLA)</source>
        <extracomment>kv_share &gt; 1 (``kvsim.models.attention.cla``)</extracomment>
        <translation>K/V compartilhado entre camadas (CLA)</translation>
    </message>
    <message>
        <source>groups of {share} layers read the K/V of the group&apos;s first layer: only {owners} of {layers} layers cache rows</source>
        <translation>grupos de {share} camadas leem o K/V da primeira camada do grupo: só {owners} de {layers} camadas guardam linhas no cache</translation>
    </message>
    <message>
        <source>DeepSeek Sparse Attention (DeepSeek-V3.2)</source>
        <extracomment>deepseek_v32 (``kvsim.models.attention.dsa``)</extracomment>
        <translation>atenção esparsa do DeepSeek (DeepSeek-V3.2)</translation>
    </message>
    <message>
        <source>latent attention whose lightning indexer scores every cached row with its own small keys ({index} values a token and layer); each query reads only its top {topk} rows: the cache holds every row, a step reads {topk}</source>
        <translation>atenção latente cujo indexador rápido pontua cada linha em cache com as suas próprias chaves pequenas ({index} valores por token e camada); cada query lê só as suas {topk} melhores linhas: o cache guarda todas as linhas, um passo lê {topk}</translation>
    </message>
</context>
<context>
    <name>lanes</name>
    <message>
        <source>last {n}</source>
        <extracomment>a lane option in words (its spec&apos;s numbers, as a label says them): what ``window:64`` means, not how it is typed</extracomment>
        <translation>últimas {n}</translation>
    </message>
    <message>
        <source>first {n}</source>
        <translation>primeiras {n}</translation>
    </message>
    <message>
        <source>{n} most read</source>
        <translation>{n} mais lidas</translation>
    </message>
    <message>
        <source>{n} recent</source>
        <translation>{n} recentes</translation>
    </message>
    <message>
        <source>{n} rows</source>
        <translation>{n} linhas</translation>
    </message>
    <message>
        <source>blocks of {n}</source>
        <translation>blocos de {n}</translation>
    </message>
    <message>
        <source>rank {n}</source>
        <translation>posto {n}</translation>
    </message>
</context>
<context>
    <name>language_menu</name>
    <message>
        <source>Language</source>
        <translation>Idioma</translation>
    </message>
    <message>
        <source>{language} is the language in use</source>
        <translation>{language} é o idioma em uso</translation>
    </message>
    <message>
        <source>{language} takes effect when kvsim restarts</source>
        <translation>{language} passa a valer quando o kvsim for reiniciado</translation>
    </message>
</context>
<context>
    <name>lesson</name>
    <message>
        <source>◀ Back</source>
        <translation>◀ Voltar</translation>
    </message>
    <message>
        <source>Next ▶</source>
        <translation>Próximo ▶</translation>
    </message>
    <message>
        <source>the previous page, or the previous lesson step (Page Up)</source>
        <translation>a página anterior, ou o passo anterior da lição (Page Up)</translation>
    </message>
    <message>
        <source>the next page, or the next lesson step (Page Down)</source>
        <translation>a próxima página, ou o próximo passo da lição (Page Down)</translation>
    </message>
    <message>
        <source>getting there …</source>
        <translation>preparando …</translation>
    </message>
    <message>
        <source>this step&apos;s state was not reached in time</source>
        <translation>o estado deste passo não foi alcançado a tempo</translation>
    </message>
    <message>
        <source>this step needs the model {model}: fetch it with `{command}`</source>
        <translation>este passo precisa do modelo {model}: baixe-o com `{command}`</translation>
    </message>
    <message>
        <source>loading the model {model} …</source>
        <translation>carregando o modelo {model} …</translation>
    </message>
    <message>
        <source>starting the run (prefill) …</source>
        <translation>começando a execução (prefill) …</translation>
    </message>
    <message>
        <source>computing step {i}/{n}</source>
        <translation>calculando o passo {i}/{n}</translation>
    </message>
    <message>
        <source>the {dock} dock cannot {method} (a lesson written for a newer app?)</source>
        <translation>o painel {dock} não sabe {method} (uma lição escrita para um app mais novo?)</translation>
    </message>
    <message>
        <source>Lesson</source>
        <translation>Lição</translation>
    </message>
</context>
<context>
    <name>policies</name>
    <message>
        <source>+ {index:,} B of indexer keys: {layers} layers × {width} values a token, held beside each latent; a step reads all of them to choose the {topk} latents its attention reads</source>
        <extracomment>the memory dock&apos;s line on a sparse-attention model&apos;s bill (deepseek_v32): the indexer&apos;s keys beside the latents</extracomment>
        <translation>+ {index:,} B de chaves do indexador: {layers} camadas × {width} valores por token, guardadas ao lado de cada latente; um passo lê todas elas para escolher os {topk} latentes que a sua atenção lê</translation>
    </message>
    <message>
        <source>KV cache, every row</source>
        <translation>KV cache, todas as linhas</translation>
    </message>
    <message>
        <source>computes the new row, reads the rest; keeps every row on every layer, local ones too</source>
        <translation>calcula a linha nova, lê as demais; guarda todas as linhas em todas as camadas, também nas locais</translation>
    </message>
    <message>
        <source>KV, all rows</source>
        <translation>KV, todas as linhas</translation>
    </message>
    <message>
        <source>KV cache</source>
        <translation>KV cache</translation>
    </message>
    <message>
        <source>computes the new row, reads the rest; a local layer keeps only its window</source>
        <translation>calcula a linha nova, lê as demais; uma camada local guarda só a sua janela</translation>
    </message>
    <message>
        <source>computes the new row, reads the rest</source>
        <translation>calcula a linha nova, lê as demais</translation>
    </message>
    <message>
        <source>no cache</source>
        <translation>sem cache</translation>
    </message>
    <message>
        <source>recomputes all rows, every step</source>
        <translation>recalcula todas as linhas, a cada passo</translation>
    </message>
    <message>
        <source>token slots per block</source>
        <translation>slots de token por bloco</translation>
    </message>
    <message>
        <source>blocks in the pool</source>
        <translation>blocos no pool</translation>
    </message>
    <message>
        <source>paged KV cache</source>
        <translation>KV cache paginado</translation>
    </message>
    <message>
        <source>rows in blocks of {block_size} slots, read through a block table</source>
        <translation>linhas em blocos de {block_size} slots, lidas por uma tabela de blocos</translation>
    </message>
    <message>
        <source>paged {block_size}</source>
        <translation>paginado {block_size}</translation>
    </message>
    <message>
        <source>whole blocks of {block_size}: the last one&apos;s {empty} empty slots are reserved (+{tail:,} B), and the block table holds {blocks} entries (+{table:,} B)</source>
        <translation>blocos inteiros de {block_size}: os {empty} slots vazios do último ficam reservados (+{tail:,} B), e a tabela de blocos guarda {blocks} entradas (+{table:,} B)</translation>
    </message>
    <message>
        <source>keys per channel, values per token, {bits}-bit codes in groups of {group}; the last {residual} tokens in full precision</source>
        <translation>chaves por canal, valores por token, códigos de {bits} bits em grupos de {group}; os últimos {residual} tokens em precisão plena</translation>
    </message>
    <message>
        <source>keys per channel, values per token, {bits}-bit codes in groups of {group}; only an unfinished group in full precision</source>
        <translation>chaves por canal, valores por token, códigos de {bits} bits em grupos de {group}; só um grupo incompleto em precisão plena</translation>
    </message>
    <message>
        <source>tokens per quantization group</source>
        <translation>tokens por grupo de quantização</translation>
    </message>
    <message>
        <source>newest tokens kept in full precision</source>
        <translation>tokens mais novos guardados em precisão plena</translation>
    </message>
    <message>
        <source>INT{bits} cache (g{group}, r{residual})</source>
        <translation>cache INT{bits} (g{group}, r{residual})</translation>
    </message>
    <message>
        <source>INT{bits} cache, r{residual}</source>
        <translation>cache INT{bits}, r{residual}</translation>
    </message>
    <message>
        <source>{newest} newest tokens are still in full precision ({bits} bits: +{residual:,} B) and the {quantized} quantized ones carry scales and zero points (+{overhead:,} B)</source>
        <translation>os {newest} tokens mais novos ainda estão em precisão plena ({bits} bits: +{residual:,} B) e os {quantized} quantizados levam escalas e pontos zero (+{overhead:,} B)</translation>
    </message>
    <message>
        <source>sliding window</source>
        <translation>janela deslizante</translation>
    </message>
    <message>
        <source>keeps the last {window} rows; older ones are evicted</source>
        <translation>guarda as últimas {window} linhas; as mais antigas são descartadas</translation>
    </message>
    <message>
        <source>the rows kept</source>
        <translation>as linhas guardadas</translation>
    </message>
    <message>
        <source>window {window}</source>
        <translation>janela {window}</translation>
    </message>
    <message>
        <source>attention sinks + window</source>
        <translation>attention sinks + janela</translation>
    </message>
    <message>
        <source>keeps the first {sinks} rows forever and the last {window}, at their original positions; the rows between are evicted</source>
        <translation>guarda para sempre as primeiras {sinks} linhas e as últimas {window}, nas suas posições originais; as do meio são descartadas</translation>
    </message>
    <message>
        <source>sinks {sinks}+{window}</source>
        <translation>sinks {sinks}+{window}</translation>
    </message>
    <message>
        <source>StreamingLLM: positions in the cache</source>
        <extracomment>the model leaves RoPE to this cache: keys are stored unrotated, ``read_scores`` rotates them</extracomment>
        <translation>StreamingLLM: posições dentro do cache</translation>
    </message>
    <message>
        <source>keeps the first {sinks} rows and the last {window}; RoPE by slot in the cache, so no distance exceeds {distance}</source>
        <translation>guarda as primeiras {sinks} linhas e as últimas {window}; RoPE pelo slot no cache, então nenhuma distância passa de {distance}</translation>
    </message>
    <message>
        <source>the first positions kept</source>
        <translation>as primeiras posições guardadas</translation>
    </message>
    <message>
        <source>the last rows kept</source>
        <translation>as últimas linhas guardadas</translation>
    </message>
    <message>
        <source>Stream {sinks}+{window}</source>
        <translation>Stream {sinks}+{window}</translation>
    </message>
    <message>
        <source>recomputes the whole prefix every step: holds nothing between steps</source>
        <extracomment>the defaults of kvsim&apos;s int8/int4 caches (kvsim/caches/quantized.py; a test holds them equal)</extracomment>
        <translation>recalcula o prefixo inteiro a cada passo: não guarda nada entre os passos</translation>
    </message>
    <message>
        <source>Speculative (k={k}, {draft})</source>
        <translation>Especulativo (k={k}, {draft})</translation>
    </message>
    <message>
        <source>drafts {k} tokens, checks them in one forward, rolls back the rejected rows</source>
        <translation>rascunha {k} tokens, confere-os num único forward, desfaz as linhas rejeitadas</translation>
    </message>
    <message>
        <source>drafts {k} tokens with a head trained on the model&apos;s last hidden state, checks them in one forward</source>
        <translation>rascunha {k} tokens com uma cabeça treinada sobre o último estado oculto do modelo, confere-os num único forward</translation>
    </message>
    <message>
        <source>the drafted tokens per check</source>
        <translation>os tokens rascunhados por conferência</translation>
    </message>
    <message>
        <source>where drafts come from</source>
        <translation>de onde vêm os rascunhos</translation>
    </message>
    <message>
        <source>Spec. k={k}</source>
        <translation>Espec. k={k}</translation>
    </message>
    <message>
        <source>{n} drafted tokens the model accepted ahead of the text are held too (+{extra:,} B)</source>
        <extracomment>the largest figures a memory report computes (far past any real model: the largest have ~10^2 layers, ~10^2 K/V heads, head dims of ~10^3 and contexts of ~10^7). A per-layer table is built for the layers, so an absurd count would cost minutes and gigabytes before it answered.</extracomment>
        <translation>{n} tokens rascunhados que o modelo aceitou à frente do texto também são guardados (+{extra:,} B)</translation>
    </message>
    <message>
        <source> · weights {weights}</source>
        <translation> · pesos {weights}</translation>
    </message>
    <message>
        <source>weights {weights}</source>
        <translation>pesos {weights}</translation>
    </message>
    <message>
        <source>per row</source>
        <translation>por linha</translation>
    </message>
    <message>
        <source>it also holds the attention score it ranks each row by (float32, per row and KV head: +{overhead:,} B)</source>
        <translation>também guarda a pontuação de atenção pela qual ordena cada linha (float32, por linha e cabeça KV: +{overhead:,} B)</translation>
    </message>
    <message>
        <source>H2O: heavy hitters + recent</source>
        <translation>H2O: mais lidas + recentes</translation>
    </message>
    <message>
        <source>keeps the {heavy} rows read most so far and the last {recent}; each KV head chooses its own</source>
        <translation>guarda as {heavy} linhas mais lidas até aqui e as últimas {recent}; cada cabeça KV escolhe as suas</translation>
    </message>
    <message>
        <source>heavy-hitter rows kept</source>
        <translation>linhas mais lidas guardadas</translation>
    </message>
    <message>
        <source>recent rows kept</source>
        <translation>linhas recentes guardadas</translation>
    </message>
    <message>
        <source>H2O {heavy}+{recent}</source>
        <translation>H2O {heavy}+{recent}</translation>
    </message>
    <message>
        <source>latent K/V by SVD</source>
        <extracomment>the model leaves RoPE to this cache (keys are stored as latents, rotated when read)</extracomment>
        <translation>K/V latente por SVD</translation>
    </message>
    <message>
        <source>holds K and V as {rank} values a token and layer (their top {rank} singular directions); no fine-tuning</source>
        <translation>guarda K e V como {rank} valores por token e camada (as suas {rank} direções singulares principais); sem ajuste fino</translation>
    </message>
    <message>
        <source>the latent&apos;s rank, values a token and layer</source>
        <translation>o posto do latente, valores por token e camada</translation>
    </message>
    <message>
        <source>latent r{rank}</source>
        <translation>latente r{rank}</translation>
    </message>
    <message>
        <source>SnapKV: prompt compressed once</source>
        <translation>SnapKV: prompt comprimido uma vez</translation>
    </message>
    <message>
        <source>keeps {budget} prompt rows chosen by the attention of its last {window} tokens; then appends</source>
        <translation>guarda {budget} linhas do prompt escolhidas pela atenção dos seus últimos {window} tokens; depois acrescenta</translation>
    </message>
    <message>
        <source>prompt rows kept</source>
        <translation>linhas do prompt guardadas</translation>
    </message>
    <message>
        <source>SnapKV {budget}</source>
        <translation>SnapKV {budget}</translation>
    </message>
    <message>
        <source>AdaKV: heads share the layer&apos;s budget</source>
        <translation>AdaKV: as cabeças dividem o orçamento da camada</translation>
    </message>
    <message>
        <source>keeps {budget} prompt rows per KV head on average; the heads split the layer&apos;s rows by the attention of the last {window} tokens (each keeps at least {floor} of its own); then appends</source>
        <translation>guarda em média {budget} linhas do prompt por cabeça KV; as cabeças dividem as linhas da camada pela atenção dos últimos {window} tokens (cada uma guarda pelo menos {floor} das suas); depois acrescenta</translation>
    </message>
    <message>
        <source>prompt rows kept per KV head on average</source>
        <translation>linhas do prompt guardadas por cabeça KV, em média</translation>
    </message>
    <message>
        <source>observation window</source>
        <translation>janela de observação</translation>
    </message>
    <message>
        <source>AdaKV {budget}</source>
        <translation>AdaKV {budget}</translation>
    </message>
    <message>
        <source>TOVA: drop the least attended</source>
        <translation>TOVA: descarta a menos lida</translation>
    </message>
    <message>
        <source>keeps {budget} rows; each step drops the row the newest query reads least</source>
        <translation>guarda {budget} linhas; a cada passo descarta a linha que a query mais nova menos lê</translation>
    </message>
    <message>
        <source>rows kept</source>
        <translation>linhas guardadas</translation>
    </message>
    <message>
        <source>TOVA {budget}</source>
        <translation>TOVA {budget}</translation>
    </message>
    <message>
        <source>PyramidKV: fewer rows in upper layers</source>
        <translation>PyramidKV: menos linhas nas camadas de cima</translation>
    </message>
    <message>
        <source>keeps {budget} prompt rows per layer on average, more in lower layers and fewer in upper ones, chosen by the attention of the last {window} tokens; then appends</source>
        <translation>guarda em média {budget} linhas do prompt por camada, mais nas camadas de baixo e menos nas de cima, escolhidas pela atenção dos últimos {window} tokens; depois acrescenta</translation>
    </message>
    <message>
        <source>prompt rows kept per layer on average</source>
        <translation>linhas do prompt guardadas por camada, em média</translation>
    </message>
    <message>
        <source>PyramidKV {budget}</source>
        <translation>PyramidKV {budget}</translation>
    </message>
    <message>
        <source>INT{bits} cache, keys rotated (g{group}, r{residual})</source>
        <translation>cache INT{bits}, chaves rotacionadas (g{group}, r{residual})</translation>
    </message>
    <message>
        <source>keys turned by a Hadamard rotation before {bits}-bit quantization, which spreads outlier channels over all; then as INT{bits}: groups of {group}, the last {residual} tokens in full precision</source>
        <translation>chaves giradas por uma rotação de Hadamard antes da quantização em {bits} bits, que espalha os canais com outliers por todos os canais; depois como o INT{bits}: grupos de {group}, os últimos {residual} tokens em precisão plena</translation>
    </message>
    <message>
        <source>INT{bits} rotated</source>
        <translation>INT{bits} rotação</translation>
    </message>
    <message>
        <source>{retrieval} of {heads} KV heads keep every row; the other {streaming} keep {sinks} sinks and the last {window} rows</source>
        <translation>{retrieval} de {heads} cabeças KV guardam todas as linhas; as outras {streaming} guardam {sinks} sinks e as últimas {window} linhas</translation>
    </message>
    <message>
        <source>DuoAttention: retrieval and streaming heads</source>
        <translation>DuoAttention: cabeças de retrieval e de streaming</translation>
    </message>
    <message>
        <source>{percent}% of the KV heads keep every row; the others keep {sinks} sinks and the last {window} rows. The split: the heads whose prompt attention falls most outside those rows (measured here, not trained)</source>
        <translation>{percent}% das cabeças KV guardam todas as linhas; as outras guardam {sinks} sinks e as últimas {window} linhas. A divisão: as cabeças cuja atenção no prompt mais cai fora dessas linhas (medida aqui, não treinada)</translation>
    </message>
    <message>
        <source>% of KV heads kept whole</source>
        <translation>% das cabeças KV guardadas inteiras</translation>
    </message>
    <message>
        <source>sinks of a streaming head</source>
        <translation>sinks de uma cabeça de streaming</translation>
    </message>
    <message>
        <source>recent rows of a streaming head</source>
        <translation>linhas recentes de uma cabeça de streaming</translation>
    </message>
    <message>
        <source>Duo {percent}%</source>
        <translation>Duo {percent}%</translation>
    </message>
    <message>
        <source>the recurrent states: {layers} Gated DeltaNet layers hold {state:,} B in all, flat in n, beside the K/V rows that only the attention layers ({attention} of them) hold, linear in n</source>
        <translation>os estados recorrentes: {layers} camadas Gated DeltaNet guardam {state:,} B ao todo, constantes em n, ao lado das linhas K/V que só as camadas de atenção ({attention} delas) guardam, lineares em n</translation>
    </message>
</context>
<context>
    <name>presenter</name>
    <message>
        <source>Faster animation</source>
        <translation>Animação mais rápida</translation>
    </message>
    <message>
        <source>Slower animation</source>
        <translation>Animação mais lenta</translation>
    </message>
    <message>
        <source>Next set of lanes</source>
        <translation>Próximo conjunto de faixas</translation>
    </message>
    <message>
        <source>Layer {n}</source>
        <translation>Camada {n}</translation>
    </message>
    <message>
        <source>Presenter mode</source>
        <translation>Modo apresentação</translation>
    </message>
    <message>
        <source>Leave presenter mode</source>
        <translation>Sair do modo apresentação</translation>
    </message>
    <message>
        <source>Full screen</source>
        <translation>Tela cheia</translation>
    </message>
    <message>
        <source>presenter mode: Space play · → step · ← back · Home reset · +/− speed · 1–9 layer · Esc leaves · ? keys</source>
        <translation>modo apresentação: Espaço reproduz · → avança · ← volta · Home recomeça · +/− velocidade · 1–9 camada · Esc sai · ? teclas</translation>
    </message>
    <message>
        <source>presenter mode · Esc leaves · ? keys</source>
        <translation>modo apresentação · Esc sai · ? teclas</translation>
    </message>
    <message>
        <source>presenter mode left (F5 enters again)</source>
        <translation>modo apresentação encerrado (F5 entra de novo)</translation>
    </message>
</context>
<context>
    <name>recent</name>
    <message>
        <source>No cache vs KV cache (the default pair) — tiny</source>
        <translation>Sem cache vs KV cache (o par padrão) — tiny</translation>
    </message>
    <message>
        <source>KV cache vs a sliding window vs sinks + window — tiny</source>
        <translation>KV cache vs janela deslizante vs sinks + janela — tiny</translation>
    </message>
    <message>
        <source>KV cache vs int8 and int4 caches (R = 2 exact rows) — tiny</source>
        <translation>KV cache vs caches int8 e int4 (R = 2 linhas exatas) — tiny</translation>
    </message>
    <message>
        <source>Recent runs</source>
        <translation>Execuções recentes</translation>
    </message>
    <message>
        <source>Demos (open instantly)</source>
        <translation>Demos (abrem na hora)</translation>
    </message>
    <message>
        <source>{path} no longer exists: removed from the recent runs</source>
        <translation>{path} não existe mais: removido das execuções recentes</translation>
    </message>
    <message>
        <source>(none yet: runs you open or save appear here)</source>
        <translation>(nenhuma ainda: as execuções que você abrir ou salvar aparecem aqui)</translation>
    </message>
    <message>
        <source>Clear the list</source>
        <translation>Limpar a lista</translation>
    </message>
    <message>
        <source>(no demos bundled: scripts/make_demos.py makes them)</source>
        <translation>(nenhuma demo incluída: scripts/make_demos.py as cria)</translation>
    </message>
</context>
<context>
    <name>session</name>
    <message>
        <source>the run&apos;s model config is not usable: {error}</source>
        <translation>a configuração do modelo desta execução não pode ser usada: {error}</translation>
    </message>
    <message>
        <source>saved run</source>
        <translation>execução salva</translation>
    </message>
</context>
<context>
    <name>shortcuts</name>
    <message>
        <source>Layer 0 … 8</source>
        <translation>Camada 0 … 8</translation>
    </message>
    <message>
        <source>hover a token or row</source>
        <translation>passe o mouse sobre um token ou linha</translation>
    </message>
    <message>
        <source>the same token highlighted in every view</source>
        <translation>o mesmo token destacado em todas as vistas</translation>
    </message>
    <message>
        <source>in the requests view: one step · the previous / next request&apos;s prefill · the first / last step</source>
        <translation>na vista de requisições: um passo · o prefill da requisição anterior / seguinte · o primeiro / último passo</translation>
    </message>
    <message>
        <source>kvsim — keys</source>
        <translation>kvsim — teclas</translation>
    </message>
    <message>
        <source>Keys (shortcut sheet)</source>
        <translation>Teclas (folha de atalhos)</translation>
    </message>
</context>
<context>
    <name>splash</name>
    <message>
        <source>See the KV cache: a transformer run token by token, without and with a cache.</source>
        <translation>Veja o KV cache: um transformer executado token a token, sem e com o cache.</translation>
    </message>
    <message>
        <source>loading the engine …</source>
        <translation>carregando o motor …</translation>
    </message>
</context>
<context>
    <name>stage</name>
    <message>
        <source>stage: {view} · PgDn/PgUp or the view&apos;s key ({key}) · S: all docks</source>
        <translation>palco: {view} · PgDn/PgUp ou a tecla da vista ({key}) · S: todos os painéis</translation>
    </message>
    <message>
        <source>{view} ({key}) · PgDn/PgUp: the other views</source>
        <translation>{view} ({key}) · PgDn/PgUp: as outras vistas</translation>
    </message>
    <message>
        <source>all docks (S: back to the stage, one view at a time)</source>
        <translation>todos os painéis (S: de volta ao palco, uma vista por vez)</translation>
    </message>
    <message>
        <source>Next lesson page or step, or the next view on the stage</source>
        <translation>Próxima página ou passo da lição, ou a próxima vista no palco</translation>
    </message>
    <message>
        <source>Previous lesson page or step, or the previous view on the stage</source>
        <translation>Página ou passo anterior da lição, ou a vista anterior no palco</translation>
    </message>
    <message>
        <source>Stage: one view at a time (on / off)</source>
        <translation>Palco: uma vista por vez (liga / desliga)</translation>
    </message>
    <message>
        <source>Views</source>
        <translation>Vistas</translation>
    </message>
</context>
<context>
    <name>toolbar</name>
    <message>
        <source>random · Llama GQA (4 layers, 8 heads, 2 kv)</source>
        <translation>aleatório · Llama GQA (4 camadas, 8 cabeças, 2 kv)</translation>
    </message>
    <message>
        <source>random · Llama MQA (4 layers, 8 heads, 1 kv)</source>
        <translation>aleatório · Llama MQA (4 camadas, 8 cabeças, 1 kv)</translation>
    </message>
    <message>
        <source>random · Llama MHA (4 layers, 8 heads)</source>
        <translation>aleatório · Llama MHA (4 camadas, 8 cabeças)</translation>
    </message>
    <message>
        <source>random · GPT-2 (4 layers, 4 heads, 128 dim)</source>
        <translation>aleatório · GPT-2 (4 camadas, 4 cabeças, dim. 128)</translation>
    </message>
    <message>
        <source>{model} (not fetched: kvsim models get {model})</source>
        <translation>{model} (não baixado: kvsim models get {model})</translation>
    </message>
    <message>
        <source>{model} (bundled)</source>
        <translation>{model} (embutido)</translation>
    </message>
    <message>
        <source>{model} (fetched)</source>
        <translation>{model} (baixado)</translation>
    </message>
    <message>
        <source>no cache</source>
        <translation>sem cache</translation>
    </message>
    <message>
        <source>KV cache</source>
        <translation>KV cache</translation>
    </message>
    <message>
        <source>Controls</source>
        <translation>Controles</translation>
    </message>
    <message>
        <source>model</source>
        <translation>modelo</translation>
    </message>
    <message>
        <source>example ({language})</source>
        <translation>exemplo ({language})</translation>
    </message>
    <message>
        <source>prompt: pick an example (English / Português) or type; Enter restarts</source>
        <translation>prompt: escolha um exemplo (English / Português) ou digite; Enter recomeça</translation>
    </message>
    <message>
        <source>random · Qwen3-Next hybrid (3 Gated DeltaNet : 1 attention, 8 layers)</source>
        <translation>aleatório · híbrido de atenção linear (3 Gated DeltaNet : 1 atenção, 8 camadas)</translation>
    </message>
    <message>
        <source>random · Llama with cross-layer KV sharing (CLA: 2 layers a K/V)</source>
        <translation>aleatório · Llama com K/V compartilhado entre camadas (CLA: 2 camadas por K/V)</translation>
    </message>
    <message>
        <source>random · DeepSeek-V3.2 sparse attention (MLA, each query reads its top 16 rows)</source>
        <translation>aleatório · atenção esparsa do DeepSeek-V3.2 (MLA, cada query lê as suas 16 melhores linhas)</translation>
    </message>
    <message>
        <source>{n} lanes</source>
        <translation>{n} faixas</translation>
    </message>
    <message>
        <source>↺ Reset</source>
        <translation>↺ Recomeçar</translation>
    </message>
    <message>
        <source>restart the run with this prompt (Home)</source>
        <translation>recomeçar a execução com este prompt (Home)</translation>
    </message>
    <message>
        <source>◀ Back</source>
        <translation>◀ Voltar</translation>
    </message>
    <message>
        <source>step back (redraw from the record) (Left)</source>
        <translation>voltar um passo (redesenhado do registro) (←)</translation>
    </message>
    <message>
        <source>Step ▶</source>
        <translation>Avançar ▶</translation>
    </message>
    <message>
        <source>next step (computes one if at the end) (Right)</source>
        <translation>próximo passo (calcula um se estiver no fim) (→)</translation>
    </message>
    <message>
        <source>▶▶ Play</source>
        <translation>▶▶ Reproduzir</translation>
    </message>
    <message>
        <source>play / pause (Space)</source>
        <translation>reproduzir / pausar (Espaço)</translation>
    </message>
    <message>
        <source>View controls</source>
        <translation>Controles de visualização</translation>
    </message>
    <message>
        <source>animation speed</source>
        <translation>velocidade da animação</translation>
    </message>
    <message>
        <source>layer</source>
        <translation>camada</translation>
    </message>
    <message>
        <source>query head (GQA: the K/V head it reads is shown in the titles)</source>
        <translation>cabeça de query (GQA: a cabeça K/V que ela lê aparece nos títulos)</translation>
    </message>
    <message>
        <source>View</source>
        <translation>Exibir</translation>
    </message>
    <message>
        <source>save or open a run (.kvsim); show or hide lanes and panels; the default layout; the language</source>
        <translation>salvar ou abrir uma execução (.kvsim); mostrar ou ocultar faixas e painéis; a disposição padrão; o idioma</translation>
    </message>
    <message>
        <source>the lanes, side by side: pick a set, or type cache policies separated by commas (known: {known}; `uncached` = `none`, `cached` = `kv`) and press Enter</source>
        <translation>as faixas, lado a lado: escolha um conjunto ou digite políticas de cache separadas por vírgulas (conhecidas: {known}; `uncached` = `none`, `cached` = `kv`) e aperte Enter</translation>
    </message>
    <message>
        <source>Open checkpoint directory or .gguf…</source>
        <translation>Abrir pasta de checkpoint ou .gguf…</translation>
    </message>
    <message>
        <source>model {model}: {family}, {layers} layers, {heads} heads / {kv_heads} kv heads, head dim {head_dim}, context {context}, {params} parameters</source>
        <translation>modelo {model}: {family}, {layers} camadas, {heads} cabeças / {kv_heads} cabeças kv, dim. da cabeça {head_dim}, contexto {context}, {params} parâmetros</translation>
    </message>
    <message>
        <source>a Portuguese prompt: {model} writes Portuguese — pick it in the model box</source>
        <translation>um prompt em português: {model} escreve português — escolha-o na caixa de modelos</translation>
    </message>
    <message>
        <source>a Portuguese prompt: `kvsim models get {model}` fetches a model that writes Portuguese</source>
        <translation>um prompt em português: `kvsim models get {model}` baixa um modelo que escreve português</translation>
    </message>
    <message>
        <source>❚❚ Pause</source>
        <translation>❚❚ Pausar</translation>
    </message>
    <message>
        <source>layer {n}</source>
        <translation>camada {n}</translation>
    </message>
    <message>
        <source>head {n} · kv {kv}</source>
        <translation>cabeça {n} · kv {kv}</translation>
    </message>
    <message>
        <source>all heads</source>
        <translation>todas as cabeças</translation>
    </message>
</context>
<context>
    <name>views.blocks</name>
    <message>
        <source>new</source>
        <translation>novo</translation>
    </message>
    <message>
        <source>write</source>
        <translation>escrita</translation>
    </message>
    <message>
        <source>hit</source>
        <translation>acerto</translation>
    </message>
    <message>
        <source>copy</source>
        <translation>cópia</translation>
    </message>
    <message>
        <source>evict</source>
        <translation>descarte</translation>
    </message>
    <message>
        <source>cached</source>
        <translation>em cache</translation>
    </message>
    <message>
        <source>freed</source>
        <translation>liberado</translation>
    </message>
    <message>
        <source>next</source>
        <translation>próximo</translation>
    </message>
    <message>
        <source>null</source>
        <translation>nulo</translation>
    </message>
    <message>
        <source>stored</source>
        <translation>gravado</translation>
    </message>
    <message>
        <source>loaded</source>
        <translation>carregado</translation>
    </message>
    <message>
        <source>from host</source>
        <translation>do host</translation>
    </message>
    <message>
        <source>from disk</source>
        <translation>do disco</translation>
    </message>
    <message>
        <source>taken from the free list for this request</source>
        <translation>tirado da lista livre para esta requisição</translation>
    </message>
    <message>
        <source>rows written into it in this step</source>
        <translation>linhas escritas nele neste passo</translation>
    </message>
    <message>
        <source>found by its hash and reused: its rows were not computed again</source>
        <translation>achado pelo hash e reutilizado: suas linhas não foram calculadas de novo</translation>
    </message>
    <message>
        <source>copied before a write (copy-on-write)</source>
        <translation>copiado antes de uma escrita (copy-on-write)</translation>
    </message>
    <message>
        <source>its cached rows were dropped so it could be handed out again</source>
        <translation>suas linhas em cache foram descartadas para que ele pudesse ser entregue de novo</translation>
    </message>
    <message>
        <source>freed, but its rows stay findable by hash</source>
        <translation>liberado, mas suas linhas continuam achadas pelo hash</translation>
    </message>
    <message>
        <source>freed, nothing to reuse</source>
        <translation>liberado, nada a reutilizar</translation>
    </message>
    <message>
        <source>first in the free queue: the block handed out next</source>
        <translation>primeiro da fila livre: o bloco entregue a seguir</translation>
    </message>
    <message>
        <source>vLLM&apos;s null block: reserved, never handed out</source>
        <translation>o bloco nulo do vLLM: reservado, nunca entregue</translation>
    </message>
    <message>
        <source>a tier block written in this step: evicted from the device, its rows kept here</source>
        <translation>um bloco de nível gravado neste passo: descartado do dispositivo, suas linhas guardadas aqui</translation>
    </message>
    <message>
        <source>a tier block read back in this step: a prefix hit copied its rows to the device</source>
        <translation>um bloco de nível lido de volta neste passo: um acerto de prefixo copiou suas linhas para o dispositivo</translation>
    </message>
    <message>
        <source>a device block filled in this step from the host tier (a prefix hit)</source>
        <translation>um bloco do dispositivo preenchido neste passo a partir do nível host (um acerto de prefixo)</translation>
    </message>
    <message>
        <source>a device block filled in this step from the disk tier (a prefix hit)</source>
        <translation>um bloco do dispositivo preenchido neste passo a partir do nível disco (um acerto de prefixo)</translation>
    </message>
    <message>
        <source>device</source>
        <translation>dispositivo</translation>
    </message>
    <message>
        <source>host</source>
        <translation>host</translation>
    </message>
    <message>
        <source>disk</source>
        <translation>disco</translation>
    </message>
    <message>
        <source>{tier} tier: {n} of {cap} blocks held, the next out first</source>
        <translation>nível {tier}: {n} de {cap} blocos ocupados, o próximo a sair primeiro</translation>
    </message>
    <message>
        <source>press Run: the pool&apos;s blocks are drawn here</source>
        <translation>aperte Executar: os blocos do pool são desenhados aqui</translation>
    </message>
</context>
<context>
    <name>views.blocks_table</name>
    <message>
        <source>logical j</source>
        <translation>lógico j</translation>
    </message>
    <message>
        <source>→ physical b</source>
        <translation>→ físico b</translation>
    </message>
    <message>
        <source>rows</source>
        <translation>linhas</translation>
    </message>
    <message>
        <source>the request&apos;s own numbering of its blocks: logical block j holds positions j·B … j·B+B−1</source>
        <translation>a numeração dos blocos da própria requisição: o bloco lógico j guarda as posições j·B … j·B+B−1</translation>
    </message>
    <message>
        <source>where that block lives in the shared pool (the grid&apos;s #b): the block table maps j → b</source>
        <translation>onde esse bloco fica no pool compartilhado (o #b da grade): a tabela de blocos mapeia j → b</translation>
    </message>
    <message>
        <source>how many of the block&apos;s B slots hold this request&apos;s rows (&apos;hit&apos;: reused from the prefix cache)</source>
        <translation>quantos dos B slots do bloco guardam linhas desta requisição (“acerto”: reutilizado pelo prefix caching)</translation>
    </message>
    <message>
        <source>{held}/{size} hit</source>
        <translation>{held}/{size} acerto</translation>
    </message>
</context>
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
        <translation>cache ocupado (bytes)</translation>
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
        <translation>bytes de K e V que cada faixa guarda após cada passo (todas as camadas): a curva de uma faixa com janela se achata</translation>
    </message>
    <message>
        <source>TTFT: time to first token — the measured time of the prefill step (prompt → first token)
ITL: inter-token latency — the time per generated token after the first (mean of the decode steps so far)
K/V rows: rows of K and V computed so far, summed over the steps
cache: bytes of K and V the lane holds now (all layers)
× the K/V rows: how many times more rows one lane computed than the other
≈ before a lane&apos;s ITL: within noise of the first lane&apos;s (the 95% interval of their paired per-step ratio includes 1)
≈ before a lane&apos;s TTFT: within noise of the first lane&apos;s (one timing each has no spread; two lanes whose
prefill is the same computation differ only by the machine&apos;s noise)
faster / slower only when the whole interval is below / above 1; otherwise: within noise</source>
        <translation>TTFT: tempo até o primeiro token — o tempo medido do passo de prefill (prompt → primeiro token)
ITL: latência entre tokens — o tempo por token gerado depois do primeiro (média dos passos de decode até agora)
linhas K/V: linhas de K e V calculadas até agora, somadas ao longo dos passos
cache: bytes de K e V que a faixa guarda agora (todas as camadas)
× as linhas K/V: quantas vezes mais linhas uma faixa calculou que a outra
≈ antes da ITL de uma faixa: dentro do ruído em relação à da primeira faixa (o intervalo de 95% da razão pareada passo a passo inclui 1)
≈ antes do TTFT de uma faixa: dentro do ruído em relação ao da primeira faixa (uma medida só não tem dispersão; duas faixas
cujo prefill é o mesmo cálculo só diferem pelo ruído da máquina)
mais rápido / mais lento só quando o intervalo inteiro fica abaixo / acima de 1; senão: dentro do ruído</translation>
    </message>
    <message>
        <source>Within noise: at this length a step&apos;s fixed cost (reading every weight once) can outweigh the rows the cache saves, and the machine&apos;s noise hides the rest; the saving shows as the text grows.</source>
        <extracomment>when an uncached lane&apos;s time per token is within noise of a cached one&apos;s</extracomment>
        <translation>Dentro do ruído: neste comprimento o custo fixo de cada passo (ler todos os pesos uma vez) pode pesar mais que as linhas que o cache economiza, e o ruído da máquina esconde o resto; a economia aparece à medida que o texto cresce.</translation>
    </message>
    <message>
        <source>faster</source>
        <translation>mais rápido</translation>
    </message>
    <message>
        <source>slower</source>
        <translation>mais lento</translation>
    </message>
    <message>
        <source>within noise</source>
        <translation>dentro do ruído</translation>
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
<context>
    <name>views.lane_area</name>
    <message>
        <source>Lanes</source>
        <translation>Faixas</translation>
    </message>
    <message>
        <source>loading the model …</source>
        <translation>carregando o modelo …</translation>
    </message>
</context>
<context>
    <name>views.lane_drafts</name>
    <message>
        <source>no forward: this token came verified with an earlier check</source>
        <translation>nenhum forward: este token já veio conferido por uma conferência anterior</translation>
    </message>
    <message>
        <source>checked {drafted} drafts: {accepted} accepted, {rejected} rolled back</source>
        <translation>conferiu {drafted} rascunhos: {accepted} aceitos, {rejected} desfeitos</translation>
    </message>
    <message>
        <source>nothing to draft: one plain forward</source>
        <translation>nada a rascunhar: um forward comum</translation>
    </message>
    <message>
        <source>{rate} % accepted</source>
        <translation>{rate} % aceitos</translation>
    </message>
    <message>
        <source>{n} tokens per forward</source>
        <translation>{n} tokens por forward</translation>
    </message>
    <message>
        <source>{x}× kv&apos;s time per token</source>
        <translation>{x}× o tempo por token do kv</translation>
    </message>
    <message>
        <source>{ms} ms per token, kv {kv} ms ({x}×)</source>
        <translation>{ms} ms por token, kv {kv} ms ({x}×)</translation>
    </message>
</context>
<context>
    <name>views.lane_hover</name>
    <message>
        <source>row {row}: {token} · computed this step</source>
        <translation>linha {row}: {token} · calculada neste passo</translation>
    </message>
    <message>
        <source>row {row}: {token} · read from the cache</source>
        <translation>linha {row}: {token} · lida do cache</translation>
    </message>
    <message>
        <source>attention of {q} (position {row}) to {k} (position {col}): masked (a future position)</source>
        <translation>atenção de {q} (posição {row}) a {k} (posição {col}): mascarada (uma posição futura)</translation>
    </message>
    <message>
        <source>attention of {q} (position {row}) to {k} (position {col}): not seen by this lane (outside its window, or evicted)</source>
        <translation>atenção de {q} (posição {row}) a {k} (posição {col}): não vista por esta faixa (fora da janela dela, ou descartada)</translation>
    </message>
    <message>
        <source>attention of {q} (position {row}) to {k} (position {col}): p = {p}</source>
        <translation>atenção de {q} (posição {row}) a {k} (posição {col}): p = {p}</translation>
    </message>
</context>
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
        <translation>este passo — o que o forward desta faixa fez para produzir um token:
• linhas K/V calculadas: linhas de K e V calculadas neste passo (sem cache: todas de novo; com KV cache: só a do token novo)
• FLOP: operações de ponto flutuante do forward deste passo (contadas a partir das formas do modelo: projeções, q·Kᵀ, ·V, MLP, camada de saída)
• ms: tempo de relógio medido do forward deste passo (a mediana, quando medido mais de uma vez)
• chaves lidas: posições de chave que a query do token novo leu
• cache, linhas e bytes: o K e o V que esta faixa guarda após o passo (todas as camadas)
• recálculo vs original |Δ|: o quanto as linhas recalculadas se afastam do primeiro cálculo (0: o passado nunca muda)
• |Δlogit|: a maior diferença entre as pontuações do próximo token desta faixa e as da faixa de referência
• KL: o quanto a distribuição do próximo token desta faixa se afasta da de referência (Kullback–Leibler; 0 = idênticas)</translation>
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
        <translation>nada em cache</translation>
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
        <source>weights {bytes}</source>
        <translation>pesos {bytes}</translation>
    </message>
    <message>
        <source>weights {bytes} · {ratio} {dtype}</source>
        <translation>pesos {bytes} · {ratio} {dtype}</translation>
    </message>
    <message>
        <source>weights {bytes} · {ratio} of the full weights</source>
        <translation>pesos {bytes} · {ratio} dos pesos completos</translation>
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
        <translation>lidas do cache</translation>
    </message>
    <message>
        <source>cached</source>
        <translation>em cache</translation>
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
        <translation>Q não fica em cache</translation>
    </message>
    <message>
        <source>not cached</source>
        <translation>fora do cache</translation>
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
        <translation>K: as chaves que esta faixa guarda, uma linha por token, as {d} dimensões da cabeça kv {kv_head}. Guardadas após RoPE: cada chave já está girada pela sua posição, então uma chave em cache é usada como está. Linhas esmaecidas foram lidas do cache; linhas vivas, calculadas neste passo.</translation>
    </message>
    <message>
        <source>q: the query rows of head {head} this lane computed this step. Q is never cached: the new token&apos;s query (bright) is what reads the cache — it meets every stored key in q·Kᵀ. Also after RoPE.</source>
        <translation>q: as linhas de query da cabeça {head} que esta faixa calculou neste passo. Q nunca fica em cache: a query do token novo (viva) é o que lê o cache — ela encontra cada chave guardada em q·Kᵀ. Também após RoPE.</translation>
    </message>
    <message>
        <source>K: the keys this lane holds, one row per token, the {d} dimensions of kv head {kv_head}. GPT-2 has no RoPE: positions were added to the input as learned embeddings. Dim rows were read from the cache, bright rows computed this step.</source>
        <translation>K: as chaves que esta faixa guarda, uma linha por token, as {d} dimensões da cabeça kv {kv_head}. O GPT-2 não tem RoPE: as posições foram somadas à entrada como embeddings aprendidos. Linhas esmaecidas foram lidas do cache; linhas vivas, calculadas neste passo.</translation>
    </message>
    <message>
        <source>q: the query rows of head {head} this lane computed this step. Q is never cached: the new token&apos;s query (bright) is what reads the cache — it meets every stored key in q·Kᵀ.</source>
        <translation>q: as linhas de query da cabeça {head} que esta faixa calculou neste passo. Q nunca fica em cache: a query do token novo (viva) é o que lê o cache — ela encontra cada chave guardada em q·Kᵀ.</translation>
    </message>
    <message>
        <source>V: the values of kv head {kv_head}; the attention row weights them and the sum is this head&apos;s output.</source>
        <translation>V: os valores da cabeça kv {kv_head}; a linha de atenção os pondera e a soma é a saída desta cabeça.</translation>
    </message>
    <message>
        <source>attention: softmax(q·Kᵀ/√d) of each query row over the keys it could see (colour ∝ √p). Hatched: masked, a future position. Cross-hatched: not seen by this lane (outside its window, or evicted).</source>
        <translation>atenção: softmax(q·Kᵀ/√d) de cada linha de query sobre as chaves que ela podia ver (cor ∝ √p). Hachurado: mascarado, uma posição futura. Quadriculado: não visto por esta faixa (fora da janela dela, ou descartado).</translation>
    </message>
</context>
<context>
    <name>views.lanes</name>
    <message>
        <source>press Step (→) to run the prefill</source>
        <translation>aperte Avançar (→) para rodar o prefill</translation>
    </message>
    <message>
        <source>recomputed</source>
        <translation>recalculadas</translation>
    </message>
</context>
<context>
    <name>views.latent</name>
    <message>
        <source>latent c | RoPE key · {r} + {dr} dims · all heads</source>
        <translation>latente c | chave RoPE · {r} + {dr} dims · todas as cabeças</translation>
    </message>
    <message>
        <source>latent c | k_R · {r}+{dr}</source>
        <translation>latente c | k_R · {r}+{dr}</translation>
    </message>
    <message>
        <source>latent</source>
        <translation>latente</translation>
    </message>
    <message>
        <source>q in latent space · head {head}</source>
        <translation>q no espaço do latente · cabeça {head}</translation>
    </message>
    <message>
        <source>V = W_UV · c · layer {layer}</source>
        <translation>V = W_UV · c · camada {layer}</translation>
    </message>
    <message>
        <source>V from c · L{layer}</source>
        <translation>V a partir de c · C{layer}</translation>
    </message>
    <message>
        <source>The cache of latent attention (MLA): one row per token and layer for all {h} heads — a latent c of {r} values and a RoPE key k_R of {dr}, {w} in all — instead of K and V of d = {d} per head. Each head&apos;s key is [W_UK · c | k_R] and its value W_UV · c, rebuilt when read (absorbed into the query here).</source>
        <translation>O cache da atenção latente (MLA): uma linha por token e camada para todas as {h} cabeças — um latente c de {r} valores e uma chave RoPE k_R de {dr}, {w} ao todo — em vez de K e V de d = {d} por cabeça. A chave de cada cabeça é [W_UK · c | k_R] e o seu valor W_UV · c, refeitos na leitura (aqui absorvidos na query).</translation>
    </message>
    <message>
        <source>q: head {head}&apos;s query moved into the latent&apos;s space, [W_UKᵀ · q^C | q^R], so that it reads the cached latents directly. Q is never cached.</source>
        <translation>q: a query da cabeça {head} levada ao espaço do latente, [W_UKᵀ · q^C | q^R], para ler diretamente os latentes em cache. Q nunca fica em cache.</translation>
    </message>
    <message>
        <source>V: nothing more is cached for the values — each head&apos;s value is W_UV · c from the same latent; the table shows the latent again.</source>
        <translation>V: nada mais fica em cache para os valores — o valor de cada cabeça é W_UV · c do mesmo latente; a tabela mostra o latente de novo.</translation>
    </message>
</context>
<context>
    <name>views.layer_kinds</name>
    <message>
        <source>layer {layer}: no K/V rows · a fixed state of {size} B</source>
        <translation>camada {layer}: sem linhas K/V · um estado fixo de {size} B</translation>
    </message>
    <message>
        <source>fixed state · {size} B</source>
        <translation>estado fixo · {size} B</translation>
    </message>
    <message>
        <source>state</source>
        <translation>estado</translation>
    </message>
    <message>
        <source>Gated DeltaNet</source>
        <translation>Gated DeltaNet</translation>
    </message>
    <message>
        <source>no V rows</source>
        <translation>sem linhas V</translation>
    </message>
    <message>
        <source>no attention over rows: the state answers each query</source>
        <translation>sem atenção sobre linhas: o estado responde a cada query</translation>
    </message>
    <message>
        <source>no attention over rows</source>
        <translation>sem atenção sobre linhas</translation>
    </message>
    <message>
        <source>K of layer {owner} (shared, CLA)</source>
        <translation>K da camada {owner} (compartilhado, CLA)</translation>
    </message>
    <message>
        <source>K of L{owner}</source>
        <translation>K de C{owner}</translation>
    </message>
    <message>
        <source>q · head {head}</source>
        <translation>q · cabeça {head}</translation>
    </message>
    <message>
        <source>V of layer {owner} (shared, CLA)</source>
        <translation>V da camada {owner} (compartilhado, CLA)</translation>
    </message>
    <message>
        <source>V of L{owner}</source>
        <translation>V de C{owner}</translation>
    </message>
    <message>
        <source>A Gated DeltaNet layer (linear attention) keeps no K/V rows in the cache: it carries a state of fixed size from token to token — the short convolution&apos;s last inputs ({conv} values) and one dk × dv matrix per value head ({rec} values) — however long the text grows. Only the attention layers&apos; tables grow.</source>
        <translation>Uma camada Gated DeltaNet (atenção linear) não guarda linhas K/V no cache: ela leva um estado de tamanho fixo de token em token — as últimas entradas da convolução curta ({conv} valores) e uma matriz dk × dv por cabeça de valor ({rec} valores) —, por mais que o texto cresça. Só as tabelas das camadas de atenção crescem.</translation>
    </message>
    <message>
        <source>Cross-layer KV sharing (CLA): layer {layer} computes no K or V; it reads layer {owner}&apos;s, which alone are cached. Its own queries meet them.</source>
        <translation>K/V compartilhado entre camadas (CLA): a camada {layer} não calcula K nem V; ela lê os da camada {owner}, os únicos em cache. As queries dela mesma os encontram.</translation>
    </message>
    <message>
        <source>state S of value head {head} · {dk} × {dv}</source>
        <translation>estado S da cabeça de valor {head} · {dk} × {dv}</translation>
    </message>
    <message>
        <source> (block means)</source>
        <translation> (médias por bloco)</translation>
    </message>
    <message>
        <source>{size} B in this layer, the same at every n</source>
        <translation>{size} B nesta camada, o mesmo a cada n</translation>
    </message>
    <message>
        <source>no lane held the state: nothing recorded to draw</source>
        <translation>nenhuma faixa guardou o estado: nada registrado para desenhar</translation>
    </message>
    <message>
        <source>held in the cache, rewritten by each token</source>
        <translation>guardado no cache, reescrito a cada token</translation>
    </message>
    <message>
        <source>computed again from token 0 this step, then dropped</source>
        <translation>recalculado desde o token 0 neste passo, depois descartado</translation>
    </message>
</context>
<context>
    <name>views.legend</name>
    <message>
        <source>K, V, q: a diverging scale, the same for every lane (0 in the middle)
K is stored after RoPE (rotated by its position) in RoPE models
attention p: the probability a query gives a key (colour ∝ √p, so small weights show)
hatched: masked — a future position, no query may see it
cross-hatched: not seen by this lane — outside its window, or evicted
dim rows: read from the cache (not computed this step)
speculative lanes: a drafted row is faint until the target checks it (solid once accepted); a rejected row is struck out in red (rolled back)</source>
        <translation>K, V, q: uma escala divergente, a mesma para todas as faixas (0 no meio)
K é guardado após RoPE (girado pela sua posição) nos modelos com RoPE
atenção p: a probabilidade que uma query dá a uma chave (cor ∝ √p, para que pesos pequenos apareçam)
hachurado: mascarado — uma posição futura, nenhuma query pode vê-la
quadriculado: não visto por esta faixa — fora da janela dela, ou descartado
linhas esmaecidas: lidas do cache (não calculadas neste passo)
faixas especulativas: uma linha rascunhada fica apagada até o alvo conferi-la (sólida quando aceita); uma linha rejeitada é riscada em vermelho (desfeita)</translation>
    </message>
    <message>
        <source>+   (0 = black)</source>
        <translation>+   (0 = preto)</translation>
    </message>
    <message>
        <source>attention p:  0</source>
        <translation>atenção p:  0</translation>
    </message>
    <message>
        <source>1   (colour ∝ √p)</source>
        <translation>1   (cor ∝ √p)</translation>
    </message>
    <message>
        <source>masked (future)</source>
        <translation>mascarado (futuro)</translation>
    </message>
    <message>
        <source>future</source>
        <translation>futuro</translation>
    </message>
    <message>
        <source>outside the window / evicted</source>
        <translation>fora da janela / descartado</translation>
    </message>
    <message>
        <source>not seen</source>
        <translation>não visto</translation>
    </message>
    <message>
        <source>dim = read from cache</source>
        <translation>esmaecido = lido do cache</translation>
    </message>
    <message>
        <source>cached</source>
        <translation>em cache</translation>
    </message>
    <message>
        <source>drafted (solid once accepted)</source>
        <translation>rascunho (sólido quando aceito)</translation>
    </message>
    <message>
        <source>drafted</source>
        <translation>rascunho</translation>
    </message>
    <message>
        <source>rejected (rolled back)</source>
        <translation>rejeitado (desfeito)</translation>
    </message>
    <message>
        <source>rejected</source>
        <translation>rejeitado</translation>
    </message>
</context>
<context>
    <name>views.memory_dock</name>
    <message>
        <source>Whose shape fills the formula: the model on screen, the bundled tiny model, or a real model&apos;s preset.</source>
        <translation>De quem é a forma que preenche a fórmula: o modelo na tela, o modelo tiny incluído ou o preset de um modelo real.</translation>
    </message>
    <message>
        <source>the model on screen</source>
        <translation>o modelo na tela</translation>
    </message>
    <message>
        <source>tiny (bundled)</source>
        <translation>tiny (incluído)</translation>
    </message>
    <message>
        <source>follow the run</source>
        <translation>seguir a execução</translation>
    </message>
    <message>
        <source>Keep the terms equal to the run on screen: its shape, its bits, and n at the cursor&apos;s step.</source>
        <translation>Manter os termos iguais aos da execução na tela: sua forma, seus bits e n no passo do cursor.</translation>
    </message>
    <message>
        <source>model</source>
        <translation>modelo</translation>
    </message>
    <message>
        <source>The model&apos;s weights at each precision: parameters × bytes per parameter.</source>
        <translation>Os pesos do modelo em cada precisão: parâmetros × bytes por parâmetro.</translation>
    </message>
    <message>
        <source>A model is trained for a maximum context; past it, its outputs are not to be trusted.</source>
        <translation>Um modelo é treinado para um contexto máximo; além dele, suas saídas não são confiáveis.</translation>
    </message>
    <message>
        <source>The plot&apos;s model: its weights and its MHA / GQA / MQA curves are drawn.</source>
        <translation>O modelo do gráfico: seus pesos e suas curvas MHA / GQA / MQA são desenhados.</translation>
    </message>
    <message>
        <source>compare with ▾</source>
        <translation>comparar com ▾</translation>
    </message>
    <message>
        <source>Other models drawn beside it.</source>
        <translation>Outros modelos desenhados ao lado.</translation>
    </message>
    <message>
        <source>Bits per cached value on the plot: 16 for FP16/BF16 models (the usual), 8 / 4 / 2 quantized.</source>
        <translation>Bits por valor em cache no gráfico: 16 para modelos FP16/BF16 (o usual), 8 / 4 / 2 quantizados.</translation>
    </message>
    <message>
        <source>Sequences served at once on the plot: each has its own cache, so the curves scale with it.</source>
        <translation>Sequências atendidas ao mesmo tempo no gráfico: cada uma tem seu próprio cache, então as curvas crescem junto.</translation>
    </message>
    <message>
        <source>KV bits</source>
        <translation>bits KV</translation>
    </message>
    <message>
        <source>batch</source>
        <translation>lote</translation>
    </message>
    <message>
        <source>The bill: formula and run</source>
        <translation>A conta: fórmula e execução</translation>
    </message>
    <message>
        <source>Context 1k → 1M</source>
        <translation>Contexto 1k → 1M</translation>
    </message>
    <message>
        <source>The formula with every term editable, checked against the run&apos;s real caches.</source>
        <translation>A fórmula com todos os termos editáveis, conferida com os caches reais da execução.</translation>
    </message>
    <message>
        <source>KV bytes as the context grows, for real models, beside their weights and GPU memories.</source>
        <translation>Bytes KV conforme o contexto cresce, para modelos reais, ao lado dos seus pesos e das memórias de GPU.</translation>
    </message>
    <message>
        <source>no preset named {name}</source>
        <translation>nenhum preset chamado {name}</translation>
    </message>
    <message>
        <source>weights of {n} parameters: {sizes}</source>
        <translation>pesos de {n} parâmetros: {sizes}</translation>
    </message>
    <message>
        <source>LM head in Q8_0</source>
        <translation>camada de saída em Q8_0</translation>
    </message>
    <message>
        <source>LM head in Q6_K</source>
        <translation>camada de saída em Q6_K</translation>
    </message>
    <message>
        <source>LM head as loaded</source>
        <translation>camada de saída como foi carregada</translation>
    </message>
    <message>
        <source>this run&apos;s lanes hold: {sizes}</source>
        <translation>as faixas desta execução guardam: {sizes}</translation>
    </message>
</context>
<context>
    <name>views.memory_form</name>
    <message>
        <source>layers L</source>
        <translation>camadas L</translation>
    </message>
    <message>
        <source>K/V heads H_kv</source>
        <translation>cabeças K/V H_kv</translation>
    </message>
    <message>
        <source>head dim d</source>
        <translation>dim. cabeça d</translation>
    </message>
    <message>
        <source>tokens n</source>
        <translation>tokens n</translation>
    </message>
    <message>
        <source>batch b</source>
        <translation>lote b</translation>
    </message>
    <message>
        <source>bits</source>
        <translation>bits</translation>
    </message>
    <message>
        <source>window W</source>
        <translation>janela W</translation>
    </message>
    <message>
        <source>per layer</source>
        <translation>por camada</translation>
    </message>
    <message>
        <source>L: transformer layers. Every layer keeps its own keys and values.</source>
        <translation>L: camadas do transformer. Cada camada guarda suas próprias chaves e valores.</translation>
    </message>
    <message>
        <source>H_kv: key/value heads. Grouped-query (GQA) and multi-query (MQA) attention share one K/V head
between several query heads: the cache counts K/V heads, not query heads.</source>
        <translation>H_kv: cabeças de chave/valor. A atenção grouped-query (GQA) e multi-query (MQA) compartilha uma cabeça K/V
entre várias cabeças de query: o cache conta cabeças K/V, não cabeças de query.</translation>
    </message>
    <message>
        <source>d: numbers in one head&apos;s key (and in its value).</source>
        <translation>d: números na chave de uma cabeça (e no seu valor).</translation>
    </message>
    <message>
        <source>n: tokens whose keys and values are kept (prompt + generated so far).</source>
        <translation>n: tokens cujas chaves e valores são guardados (prompt + gerados até agora).</translation>
    </message>
    <message>
        <source>b: sequences served at once. Each one has its own cache.</source>
        <translation>b: sequências atendidas ao mesmo tempo. Cada uma tem seu próprio cache.</translation>
    </message>
    <message>
        <source>How many bits each cached number takes: 16 for an FP16/BF16 model, 32 as kvsim runs on the CPU,
8 / 4 / 2 for a quantized cache (its scales and zero points come on top).</source>
        <translation>Quantos bits ocupa cada número em cache: 16 num modelo FP16/BF16, 32 como o kvsim roda na CPU,
8 / 4 / 2 num cache quantizado (suas escalas e pontos zero vêm por cima).</translation>
    </message>
    <message>
        <source>W: a sliding window. Each layer keeps only the last W tokens, so the cache stops
growing at W. &apos;none&apos; keeps every token.</source>
        <translation>W: uma janela deslizante. Cada camada guarda só os últimos W tokens, então o cache para
de crescer em W. &apos;nenhuma&apos; guarda todos os tokens.</translation>
    </message>
    <message>
        <source>none</source>
        <translation>nenhuma</translation>
    </message>
    <message>
        <source>A window per layer, repeated over the layers: &apos;4096, full&apos; alternates local and global layers
(Gemma 2), &apos;512, 512, 512, 512, 512, full&apos; is Gemma 3. &apos;full&apos; keeps every token. Same as
`kvsim memory --layer-windows`.</source>
        <translation>Uma janela por camada, repetida ao longo das camadas: &apos;4096, full&apos; alterna camadas locais e globais
(Gemma 2), &apos;512, 512, 512, 512, 512, full&apos; é o Gemma 3. &apos;full&apos; guarda todos os tokens. O mesmo que
`kvsim memory --layer-windows`.</translation>
    </message>
    <message>
        <source>MHA: one K/V head per query head. GQA: groups share one. MQA: all share one.</source>
        <translation>MHA: uma cabeça K/V por cabeça de query. GQA: grupos compartilham uma. MQA: todas compartilham uma.</translation>
    </message>
    <message>
        <source>kv bytes = 2 (a key and a value) × Σ over layers of the tokens each layer keeps × H_kv × d × b × bits/8</source>
        <translation>bytes kv = 2 (uma chave e um valor) × Σ, em todas as camadas, dos tokens que cada camada guarda × H_kv × d × b × bits/8</translation>
    </message>
    <message>
        <source>Per token: what one more token costs in every layer (batch 1). Next token: what it adds now
(a full window adds nothing).</source>
        <translation>Por token: quanto custa mais um token em todas as camadas (lote 1). Próximo token: quanto ele soma agora
(uma janela cheia não soma nada).</translation>
    </message>
    <message>
        <source>MHA: {n} K/V heads, one per query head</source>
        <translation>MHA: {n} cabeças K/V, uma por cabeça de query</translation>
    </message>
    <message>
        <source>MQA: 1 K/V head shared by all {heads} query heads</source>
        <translation>MQA: 1 cabeça K/V compartilhada pelas {heads} cabeças de query</translation>
    </message>
    <message>
        <source>GQA: {n} K/V heads, each shared by {group} of {heads} query heads</source>
        <translation>GQA: {n} cabeças K/V, cada uma compartilhada por {group} das {heads} cabeças de query</translation>
    </message>
    <message>
        <source>{bytes} B per token in every layer ({size}) · the next token adds {new} B now</source>
        <translation>{bytes} B por token em todas as camadas ({size}) · o próximo token soma {new} B agora</translation>
    </message>
    <message>
        <source>MLA: one latent of {r} and one RoPE key of {dr} a token and layer, shared by all {heads} heads (each head&apos;s K and V are rebuilt from it); no K/V heads, no factor 2</source>
        <translation>MLA: um latente de {r} e uma chave RoPE de {dr} por token e camada, compartilhados pelas {heads} cabeças (o K e o V de cada cabeça são refeitos a partir dele); sem cabeças de K/V, sem o fator 2</translation>
    </message>
</context>
<context>
    <name>views.memory_live</name>
    <message>
        <source>no closed form for this policy (a plug-in): the live bytes are its own count</source>
        <translation>sem fórmula fechada para esta política (um plug-in): os bytes reais são a contagem dela</translation>
    </message>
    <message>
        <source>✗ live differs from the formula by {diff} B</source>
        <translation>✗ o real difere da fórmula em {diff} B</translation>
    </message>
    <message>
        <source>live = formula {extra} B ✓ — {why}</source>
        <translation>real = fórmula {extra} B ✓ — {why}</translation>
    </message>
    <message>
        <source>formula = live ✓</source>
        <translation>fórmula = real ✓</translation>
    </message>
    <message>
        <source>What each lane of the run on screen really holds after the step under the cursor, next to what
the formula says it should hold with that lane&apos;s own settings (window, bits) and the model&apos;s shape.</source>
        <translation>O que cada faixa da execução na tela realmente guarda depois do passo sob o cursor, ao lado do que
a fórmula diz que ela deveria guardar com os ajustes da própria faixa (janela, bits) e a forma do modelo.</translation>
    </message>
    <message>
        <source>&lt;b&gt;This run&lt;/b&gt;: no step yet — step once to compare the formula with the real cache.</source>
        <translation>&lt;b&gt;Esta execução&lt;/b&gt;: nenhum passo ainda — avance um passo para comparar a fórmula com o cache real.</translation>
    </message>
    <message>
        <source>&lt;b&gt;The run on screen&lt;/b&gt;, step {step}: n = {n} tokens, {dtype} ({layers} layers × one latent of {latent} + a RoPE key of {rope}, shared by every head)</source>
        <translation>&lt;b&gt;A execução na tela&lt;/b&gt;, passo {step}: n = {n} tokens, {dtype} ({layers} camadas × um latente de {latent} + uma chave RoPE de {rope}, compartilhados por todas as cabeças)</translation>
    </message>
    <message>
        <source>&lt;b&gt;The run on screen&lt;/b&gt;, step {step}: n = {n} tokens, {dtype} ({layers} layers × {kv_heads} K/V heads × d {head_dim})</source>
        <translation>&lt;b&gt;A execução na tela&lt;/b&gt;, passo {step}: n = {n} tokens, {dtype} ({layers} camadas × {kv_heads} cabeças K/V × d {head_dim})</translation>
    </message>
    <message>
        <source>lane</source>
        <translation>faixa</translation>
    </message>
    <message>
        <source>live</source>
        <translation>real</translation>
    </message>
    <message>
        <source>formula</source>
        <translation>fórmula</translation>
    </message>
    <message>
        <source>The lane (a cache policy) of the run on screen.</source>
        <translation>A faixa (uma política de cache) da execução na tela.</translation>
    </message>
    <message>
        <source>Bytes the lane&apos;s cache really holds after this step, as it reported them (K/V values, and any scales).</source>
        <translation>Bytes que o cache da faixa realmente guarda depois deste passo, como ele os informou (valores K/V e eventuais escalas).</translation>
    </message>
    <message>
        <source>2 · L · H_kv · d · min(n, W) · b · bits/8 with this lane&apos;s window W and bits (b = 1).</source>
        <translation>2 · L · H_kv · d · min(n, W) · b · bits/8 com a janela W e os bits desta faixa (b = 1).</translation>
    </message>
    <message>
        <source>✓: the formula accounts for every byte the lane holds.</source>
        <translation>✓: a fórmula explica cada byte que a faixa guarda.</translation>
    </message>
    <message>
        <source>{size}: what {lane} holds after step {step}</source>
        <translation>{size}: o que {lane} guarda depois do passo {step}</translation>
    </message>
    <message>
        <source>no formula known for this policy</source>
        <translation>nenhuma fórmula conhecida para esta política</translation>
    </message>
    <message>
        <source>{product} = {bytes} B ({size}) at {bits} bits</source>
        <translation>{product} = {bytes} B ({size}) com {bits} bits</translation>
    </message>
    <message>
        <source>&lt;b&gt;formula = live ✓&lt;/b&gt; for the one lane the formula knows</source>
        <translation>&lt;b&gt;fórmula = real ✓&lt;/b&gt; na única faixa que a fórmula conhece</translation>
    </message>
    <message>
        <source>&lt;b&gt;formula = live ✓&lt;/b&gt; for all {n} lanes the formula knows</source>
        <translation>&lt;b&gt;fórmula = real ✓&lt;/b&gt; nas {n} faixas que a fórmula conhece</translation>
    </message>
    <message>
        <source> (1 plug-in lane without one)</source>
        <translation> (1 faixa de plug-in sem fórmula)</translation>
    </message>
    <message>
        <source> ({n} plug-in lanes without one)</source>
        <translation> ({n} faixas de plug-in sem fórmula)</translation>
    </message>
    <message>
        <source>✗ {n} lane(s) hold other bytes than the formula</source>
        <translation>✗ {n} faixa(s) guardam bytes diferentes da fórmula</translation>
    </message>
</context>
<context>
    <name>views.memory_plot</name>
    <message>
        <source>context (tokens)</source>
        <translation>contexto (tokens)</translation>
    </message>
    <message>
        <source>KV-cache bytes as the context grows (both axes logarithmic). Solid: the chosen model; dashed: the same
model as MHA; dotted: as MQA. Grey lines: the chosen model&apos;s weights at each precision; coloured dashed
lines: GPU memories. Where a curve crosses a weights line, the cache outgrows the model.</source>
        <translation>Bytes do KV cache conforme o contexto cresce (os dois eixos logarítmicos). Contínua: o modelo escolhido; tracejada: o mesmo
modelo como MHA; pontilhada: como MQA. Linhas cinza: os pesos do modelo escolhido em cada precisão; linhas
tracejadas coloridas: memórias de GPU. Onde uma curva cruza uma linha de pesos, o cache fica maior que o modelo.</translation>
    </message>
    <message>
        <source>The curves: each model&apos;s KV cache as the context grows.</source>
        <translation>As curvas: o KV cache de cada modelo conforme o contexto cresce.</translation>
    </message>
    <message>
        <source>Where the chosen model&apos;s cache becomes as large as its FP16 weights (batch and bits as above).</source>
        <translation>Onde o cache do modelo escolhido fica do tamanho dos seus pesos FP16 (lote e bits como acima).</translation>
    </message>
    <message>
        <source>KV cache at {bits} bits, batch {batch}</source>
        <translation>KV cache com {bits} bits, lote {batch}</translation>
    </message>
    <message>
        <source>{kind} (1 K/V head)</source>
        <translation>{kind} (1 cabeça K/V)</translation>
    </message>
    <message>
        <source>{kind} ({n} K/V heads)</source>
        <translation>{kind} ({n} cabeças K/V)</translation>
    </message>
    <message>
        <source>its max context, {n} tokens</source>
        <translation>seu contexto máximo, {n} tokens</translation>
    </message>
    <message>
        <source>{model}&apos;s weights (left)</source>
        <translation>pesos do {model} (esquerda)</translation>
    </message>
    <message>
        <source>GPU memory (right)</source>
        <translation>memória de GPU (direita)</translation>
    </message>
    <message>
        <source>as {kind} it never does (its windows cap it)</source>
        <translation>como {kind} nunca fica (suas janelas a limitam)</translation>
    </message>
    <message>
        <source>as {kind} at {n} tokens</source>
        <translation>como {kind} em {n} tokens</translation>
    </message>
    <message>
        <source>&lt;b&gt;{model}&lt;/b&gt;: the KV cache outgrows its FP16 weights ({size}) — {where}.</source>
        <translation>&lt;b&gt;{model}&lt;/b&gt;: o KV cache fica maior que seus pesos FP16 ({size}) — {where}.</translation>
    </message>
</context>
<context>
    <name>views.memory_words</name>
    <message>
        <source>{n} layers × </source>
        <translation>{n} camadas × </translation>
    </message>
    <message>
        <source>{model} reads at most {context} tokens (its max_position_embeddings): {tokens} is past it</source>
        <translation>{model} lê no máximo {context} tokens (seu max_position_embeddings): {tokens} passa disso</translation>
    </message>
    <message>
        <source>; {model} has the same shape and reads {context}</source>
        <translation>; {model} tem a mesma forma e lê {context}</translation>
    </message>
</context>
<context>
    <name>views.overview</name>
    <message>
        <source>every query head of the selected layer; a frame&apos;s colour is its K/V head: heads framed alike
share one K and V (GQA), so the cache holds H_kv heads, not H</source>
        <translation>todas as cabeças de query da camada escolhida; a cor da moldura é a da sua cabeça K/V: cabeças com a mesma moldura
compartilham um K e um V (GQA), então o cache guarda H_kv cabeças, não H</translation>
    </message>
    <message>
        <source>GQA: {group} share each</source>
        <translation>GQA: {group} compartilham cada</translation>
    </message>
    <message>
        <source>MLA: one latent shared by all</source>
        <translation>MLA: um latente compartilhado por todas</translation>
    </message>
    <message>
        <source>{h} heads, {hkv} K/V · {kind}</source>
        <translation>{h} cabeças, {hkv} K/V · {kind}</translation>
    </message>
    <message>
        <source>head {i} · kv {g}</source>
        <translation>cabeça {i} · kv {g}</translation>
    </message>
</context>
<context>
    <name>views.requests</name>
    <message>
        <source>hover a block: its tokens, hash, reference count and holders</source>
        <translation>passe o mouse sobre um bloco: seus tokens, hash, contagem de referências e donos</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>Cancelar</translation>
    </message>
    <message>
        <source>stop the requests run (nothing of it is kept)</source>
        <translation>parar a execução das requisições (nada dela é guardado)</translation>
    </message>
    <message>
        <source>Run: the request list goes through one paged pool, prefix caching off and then on</source>
        <translation>Executar: a lista de requisições passa por um pool paginado, sem e depois com prefix caching</translation>
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
        <translation>por requisição: linhas do prefill, acertos, TTFT medido sem e com prefix caching; memória de 3 esquemas de alocação</translation>
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
        <source>Timeline</source>
        <translation>Linha do tempo</translation>
    </message>
    <message>
        <source>continuous batching: each request over the steps (waiting, prefill chunk, decode, recompute, preempted) and the pool&apos;s occupancy; the outlined column is the shown step</source>
        <translation>lotes contínuos: cada requisição ao longo dos passos (esperando, pedaço de prefill, decode, recálculo, preemptada) e a ocupação do pool; a coluna contornada é o passo mostrado</translation>
    </message>
    <message>
        <source>tokens on the edge</source>
        <translation>tokens na aresta</translation>
    </message>
    <message>
        <source>count</source>
        <translation>contagem</translation>
    </message>
    <message>
        <source>requests through it</source>
        <translation>requisições que passam por ele</translation>
    </message>
    <message>
        <source>Prefix tree</source>
        <translation>Árvore de prefixos</translation>
    </message>
    <message>
        <source>a radix tree of what the requests computed (SGLang&apos;s structure): a node shared by several requests is a prefix they could all reuse, token by token, not only in whole blocks</source>
        <translation>uma árvore radix do que as requisições calcularam (a estrutura do SGLang): um nó compartilhado por várias requisições é um prefixo que todas poderiam reutilizar, token a token, não só em blocos inteiros</translation>
    </message>
    <message>
        <source>Prefill / decode</source>
        <translation>Prefill / decode</translation>
    </message>
    <message>
        <source>disaggregated prefill and decode: the request list served by one pool and by two instances with their own pools; the two pools, the transfers between them, TTFT and ITL both ways</source>
        <translation>prefill e decode desagregados: a lista de requisições servida por um pool e por duas instâncias, cada uma com seu pool; os dois pools, as transferências entre eles, TTFT e ITL dos dois jeitos</translation>
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
        <source>step {s} ({i} / {n})</source>
        <translation>passo {s} ({i} / {n})</translation>
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
        <translation>com prefix caching</translation>
    </message>
    <message>
        <source>prefix caching off</source>
        <translation>sem prefix caching</translation>
    </message>
    <message>
        <source>which of the two runs the blocks show: the same requests with prefix caching on or off</source>
        <translation>qual das duas execuções os blocos mostram: as mesmas requisições com ou sem prefix caching</translation>
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
        <source>serving {n} requests colocated, then split (a second process loads the model for the decode instance)…</source>
        <translation>servindo {n} requisições num só pool, depois separadas (um segundo processo carrega o modelo para a instância de decode)…</translation>
    </message>
    <message>
        <source>cancelling…</source>
        <translation>cancelando…</translation>
    </message>
    <message>
        <source>running {what} twice through one paged pool (prefix caching off, then on), timing each prefill…</source>
        <translation>executando {what} duas vezes por um pool paginado (sem e depois com prefix caching), cronometrando cada prefill…</translation>
    </message>
    <message>
        <source>the requests could not run: {error}</source>
        <translation>não foi possível executar as requisições: {error}</translation>
    </message>
    <message>
        <source>the requests run was cancelled: nothing of it was kept</source>
        <translation>a execução das requisições foi cancelada: nada dela foi guardado</translation>
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
    <message>
        <source>could not show {path}: {error}</source>
        <translation>não foi possível mostrar {path}: {error}</translation>
    </message>
    <message>
        <source>saved run: {summary}</source>
        <translation>execução salva: {summary}</translation>
    </message>
</context>
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
        <source>continuous batching: request i arrives at step 2i; every step runs ONE forward over all running requests (decodes and prompt chunks, within the budget); a full pool preempts the latest request</source>
        <translation>lotes contínuos: a requisição i chega no passo 2i; cada passo executa UM forward com todas as requisições em andamento (decodes e pedaços de prompt, dentro do orçamento); um pool cheio preempta a requisição mais recente</translation>
    </message>
    <message>
        <source>continuous batching: positions one batched forward computes at most; a longer prompt is split into chunks over several steps (chunked prefill)</source>
        <translation>lotes contínuos: posições que um forward em lote calcula no máximo; um prompt mais longo é dividido em pedaços ao longo de vários passos (prefill em pedaços)</translation>
    </message>
    <message>
        <source>offload tiers under the pool (prefix caching on): a cached block the pool evicts is copied to the host tier (then down to disk) instead of dropped, and a later prefix hit loads it back. Give a pool too small to keep every prefix, or nothing is evicted</source>
        <translation>níveis de offload abaixo do pool (com prefix caching): um bloco em cache que o pool descarta é copiado para o nível host (depois para o disco) em vez de perdido, e um acerto de prefixo posterior o carrega de volta. Dê um pool pequeno demais para guardar todos os prefixos, senão nada é descartado</translation>
    </message>
    <message>
        <source>no tiers</source>
        <extracomment>the tiers the offload combo offers: (its words, the spec as ``--offload`` takes it; None: no tiers)</extracomment>
        <translation>sem níveis</translation>
    </message>
    <message>
        <source>host 1 MB</source>
        <translation>host 1 MB</translation>
    </message>
    <message>
        <source>disk 4 MB</source>
        <translation>disco 4 MB</translation>
    </message>
    <message>
        <source>host 256 KB + disk 4 MB</source>
        <translation>host 256 KB + disco 4 MB</translation>
    </message>
    <message>
        <source>run the request list twice through one paged pool — prefix caching off, then on — and measure each request&apos;s TTFT (on the worker thread)</source>
        <translation>executar a lista de requisições duas vezes por um pool paginado — sem e depois com prefix caching — e medir o TTFT de cada requisição (na thread de trabalho)</translation>
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
        <source>budget</source>
        <translation>orçamento</translation>
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
        <translation>toda requisição começa com este texto: seus blocos cheios são o que o prefix caching reutiliza</translation>
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
<context>
    <name>views.requests_job</name>
    <message>
        <source>sequential</source>
        <translation>sequencial</translation>
    </message>
    <message>
        <source>interleaved</source>
        <translation>intercalado</translation>
    </message>
    <message>
        <source>continuous batching</source>
        <translation>lotes contínuos</translation>
    </message>
    <message>
        <source>no demo request lists found in resources/requests</source>
        <extracomment>the demo list run by default: one whose requests share a prefix for this kind of model the same in a Portuguese app: Portuguese questions behind a Portuguese system prompt, a Portuguese opening one worker job runs the requests for about this long, then hands the worker back (main Steps go between)</extracomment>
        <translation>nenhuma lista de requisições de demonstração encontrada em resources/requests</translation>
    </message>
    <message>
        <source>the model changed while the requests ran: run them again</source>
        <translation>o modelo mudou enquanto as requisições rodavam: execute-as de novo</translation>
    </message>
    <message>
        <source>no model is loaded yet</source>
        <translation>nenhum modelo carregado ainda</translation>
    </message>
    <message>
        <source>schedule must be one of {names}</source>
        <translation>a ordem deve ser uma de {names}</translation>
    </message>
</context>
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
        <translation>linhas do prefill: linhas K/V que o prefill calculou sem prefix caching (todas)</translation>
    </message>
    <message>
        <source>computed · on</source>
        <translation>calculadas · com</translation>
    </message>
    <message>
        <source>prefill rows: K/V rows its prefill computed with prefix caching: only what was not found</source>
        <translation>linhas do prefill: linhas K/V que o prefill calculou com prefix caching: só o que não foi achado</translation>
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
        <translation>com o cache ligado: blocos do prompt achados pelo hash (acertos) e blocos que o prefill teve de escrever (faltas)</translation>
    </message>
    <message>
        <source>hits from host</source>
        <translation>acertos do host</translation>
    </message>
    <message>
        <source>of its hit blocks, those the device pool had evicted and the host tier gave back (its rows copied in)</source>
        <translation>dos seus blocos com acerto, os que o pool do dispositivo tinha descartado e o nível host devolveu (suas linhas copiadas de volta)</translation>
    </message>
    <message>
        <source>hits from disk</source>
        <translation>acertos do disco</translation>
    </message>
    <message>
        <source>of its hit blocks, those the disk tier gave back (read from its file, memory-mapped)</source>
        <translation>dos seus blocos com acerto, os que o nível disco devolveu (lidos do seu arquivo, mapeado em memória)</translation>
    </message>
    <message>
        <source>TTFT saved, ms</source>
        <translation>TTFT poupado, ms</translation>
    </message>
    <message>
        <source>TTFT off − TTFT on: what taking its hits (from the device and the tiers) saved against computing every row again, measured (loads, and the stores the loads&apos; allocations made, included)</source>
        <translation>TTFT sem − TTFT com: o que usar seus acertos (do dispositivo e dos níveis) poupou em relação a calcular de novo todas as linhas, medido (incluídas as cargas e as gravações que as alocações das cargas fizeram)</translation>
    </message>
    <message>
        <source>TTFT off, ms</source>
        <translation>TTFT sem, ms</translation>
    </message>
    <message>
        <source>time to first token without prefix caching: the median of the timed prefills</source>
        <translation>tempo até o primeiro token sem prefix caching: a mediana dos prefills cronometrados</translation>
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
        <translation>tempo até o primeiro token com prefix caching: busca + o resto do prefill + primeiro token</translation>
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
        <source>on vs off</source>
        <translation>ligado vs desligado</translation>
    </message>
    <message>
        <source>the two runs&apos; prefills timed in turn (off, on, on, off, …) and paired: within noise when the 95% interval of the paired ratio includes 1</source>
        <translation>os prefills das duas execuções cronometrados alternadamente (desligado, ligado, ligado, desligado, …) e pareados: dentro do ruído quando o intervalo de 95% da razão pareada inclui 1</translation>
    </message>
    <message>
        <source>blocks: physical / mapped</source>
        <translation>blocos: físicos / mapeados</translation>
    </message>
    <message>
        <source>with caching on: physical blocks, the blocks of the pool behind its block table, each counted once as vLLM&apos;s allocator counts them (per request: the ones no earlier request&apos;s table mapped; all: every physical block) / logical blocks mapped, the entries of its block table when it finished (a block several requests share is mapped in each of their tables; all: the sum of the tables&apos; entries)</source>
        <translation>com o cache ligado: blocos físicos, os blocos do pool por trás da sua tabela de blocos, cada um contado uma vez, como o alocador do vLLM os conta (por requisição: os que a tabela de nenhuma requisição anterior mapeou; todas: todos os blocos físicos) / blocos lógicos mapeados, as entradas da sua tabela de blocos quando terminou (um bloco que várias requisições compartilham é mapeado em cada uma das tabelas; todas: a soma das entradas das tabelas)</translation>
    </message>
    <message>
        <source>faster</source>
        <extracomment>the comparison&apos;s verdicts as the table says them (the data keeps the engine&apos;s words)</extracomment>
        <translation>mais rápido</translation>
    </message>
    <message>
        <source>slower</source>
        <translation>mais lento</translation>
    </message>
    <message>
        <source>within noise</source>
        <translation>dentro do ruído</translation>
    </message>
    <message>
        <source>paired ratio {ratio}× (95% interval {low}–{high}, {pairs} pairs): {verdict}</source>
        <translation>razão pareada {ratio}× (intervalo de 95% {low}–{high}, {pairs} pares): {verdict}</translation>
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
        <translation>somas de todas as requisições (a razão: TTFT total com ÷ TTFT total sem)</translation>
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
        <source>#{block}: vLLM&apos;s null block (reserved, never handed out)</source>
        <translation>#{block}: o bloco nulo do vLLM (reservado, nunca entregue)</translation>
    </message>
    <message>
        <source>, place {k} of {n} in the free queue</source>
        <translation>, posição {k} de {n} na fila livre</translation>
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
        <source>{tier} tier, place {k} of {n} (the next out first) · hash {hash} · its rows were evicted from the device and kept here</source>
        <translation>nível {tier}, posição {k} de {n} (o próximo a sair primeiro) · hash {hash} · suas linhas foram descartadas do dispositivo e guardadas aqui</translation>
    </message>
    <message>
        <source>{swatches}: where a block&apos;s rows are (the band on its top edge)</source>
        <translation>{swatches}: onde estão as linhas de um bloco (a faixa na sua borda de cima)</translation>
    </message>
    <message>
        <source>free queue: empty (the next block must come from a finished request)</source>
        <translation>fila livre: vazia (o próximo bloco tem de vir de uma requisição que terminar)</translation>
    </message>
    <message>
        <source>… {n} more</source>
        <translation>… mais {n}</translation>
    </message>
    <message>
        <source>free queue, next first: {blocks} · next block handed out: #{next}</source>
        <translation>fila livre, o próximo primeiro: {blocks} · próximo bloco entregue: #{next}</translation>
    </message>
    <message>
        <source>each cell is one physical block of the pool: its B slots (filled in its holder&apos;s colour), its id #b</source>
        <translation>cada célula é um bloco físico do pool: seus B slots (preenchidos na cor do dono), seu id #b</translation>
    </message>
    <message>
        <source>×N: N requests hold it (shared by prefix caching); the stripes on its left edge are its holders</source>
        <translation>×N: N requisições o ocupam (compartilhado pelo prefix caching); as listras na borda esquerda são seus donos</translation>
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
        <source>q k: a free block&apos;s place in the free queue, q1 (next) handed out first; the queue&apos;s order is the pool&apos;s (vLLM: freed blocks with no hash at the front, cached ones at the back, tail first)</source>
        <translation>q k: a posição de um bloco livre na fila livre, q1 (o próximo) entregue primeiro; a ordem da fila é a do pool (vLLM: blocos liberados sem hash na frente, os em cache no fim, a cauda primeiro)</translation>
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
        <source>{who} prefill: {computed} rows computed, {reused} reused ({hits} block hits). TTFT {ttft}.</source>
        <translation>{who} prefill: {computed} linhas calculadas, {reused} reutilizadas ({hits} acertos de bloco). TTFT {ttft}.</translation>
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
        <source>prefill chunk of {n}</source>
        <translation>pedaço de prefill de {n}</translation>
    </message>
    <message>
        <source>decode</source>
        <translation>decode</translation>
    </message>
    <message>
        <source>recompute of {n}</source>
        <translation>recálculo de {n}</translation>
    </message>
    <message>
        <source>&lt;b style=&apos;color:{color}&apos;&gt;request {n}&lt;/b&gt;</source>
        <translation>&lt;b style=&apos;color:{color}&apos;&gt;requisição {n}&lt;/b&gt;</translation>
    </message>
    <message>
        <source>Step {s}: one forward over {k} request(s), {t} positions ({ms}): {parts}.</source>
        <translation>Passo {s}: um forward com {k} requisição(ões), {t} posições ({ms}): {parts}.</translation>
    </message>
    <message>
        <source>&lt;span style=&apos;color:{error}&apos;&gt;Preempted: request {names}&lt;/span&gt; (its blocks freed; recomputed later).</source>
        <translation>&lt;span style=&apos;color:{error}&apos;&gt;Preemptada: requisição {names}&lt;/span&gt; (seus blocos liberados; recalculada depois).</translation>
    </message>
    <message>
        <source>Finished: request {names}.</source>
        <translation>Concluída: requisição {names}.</translation>
    </message>
    <message>
        <source>press Run: each request&apos;s numbers, prefix caching off and on, appear here</source>
        <translation>aperte Executar: os números de cada requisição, sem e com prefix caching, aparecem aqui</translation>
    </message>
    <message>
        <source>the paged figure recomputed for the same rows with other block sizes: small blocks waste less of the last block, but a block is only shared once it is full, and the table has more entries</source>
        <translation>o valor paginado recalculado para as mesmas linhas com outros tamanhos de bloco: blocos pequenos desperdiçam menos no último bloco, mas um bloco só é compartilhado quando está cheio, e a tabela tem mais entradas</translation>
    </message>
    <message>
        <source>≈: within noise.</source>
        <translation>≈: dentro do ruído.</translation>
    </message>
    <message>
        <source>The same {n} requests, blocks of {b}, run with prefix caching off and on ({schedule}); TTFT is the median of {repeats} timed prefills, measured on this machine.</source>
        <translation>As mesmas {n} requisições, blocos de {b}, executadas sem e com prefix caching ({schedule}); o TTFT é a mediana de {repeats} prefills cronometrados, medidos nesta máquina.</translation>
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
        <translation>respostas (com o cache ligado): {answers}</translation>
    </message>
</context>
<context>
    <name>views.requests_split</name>
    <message>
        <source>no model is loaded yet</source>
        <translation>nenhum modelo carregado ainda</translation>
    </message>
    <message>
        <source>r{n} co</source>
        <translation>r{n} junto</translation>
    </message>
    <message>
        <source>r{n} split</source>
        <translation>r{n} separado</translation>
    </message>
    <message>
        <source>{ms:.0f} ms</source>
        <translation>{ms:.0f} ms</translation>
    </message>
    <message>
        <source>prompt tokens</source>
        <translation>tokens do prompt</translation>
    </message>
    <message>
        <source>TTFT colocated, ms</source>
        <translation>TTFT num só pool, ms</translation>
    </message>
    <message>
        <source>TTFT split, ms</source>
        <translation>TTFT separado, ms</translation>
    </message>
    <message>
        <source>ITL median colocated, ms</source>
        <translation>ITL mediana num só pool, ms</translation>
    </message>
    <message>
        <source>ITL median split, ms</source>
        <translation>ITL mediana separado, ms</translation>
    </message>
    <message>
        <source>ITL worst colocated, ms</source>
        <translation>pior ITL num só pool, ms</translation>
    </message>
    <message>
        <source>ITL worst split, ms</source>
        <translation>pior ITL separado, ms</translation>
    </message>
    <message>
        <source>moved (blocks, bytes)</source>
        <translation>movido (blocos, bytes)</translation>
    </message>
    <message>
        <source>copies: pack + unpack, ms</source>
        <translation>cópias: empacotar + desempacotar, ms</translation>
    </message>
    <message>
        <source>delivered after, ms</source>
        <translation>entregue após, ms</translation>
    </message>
    <message>
        <source>same tokens</source>
        <translation>mesmos tokens</translation>
    </message>
    <message>
        <source>req {n}</source>
        <translation>req {n}</translation>
    </message>
    <message>
        <source>yes</source>
        <translation>sim</translation>
    </message>
    <message>
        <source>NO</source>
        <translation>NÃO</translation>
    </message>
    <message>
        <source>Run colocated and split</source>
        <translation>Rodar junto e separado</translation>
    </message>
    <message>
        <source>serve the request list twice, greedy: colocated (one pool, continuous batching) and split (prefill here, decode in a second process with its own pool, the K/V rows moved through shared memory)</source>
        <translation>servir a lista de requisições duas vezes, greedy: num só pool (lotes contínuos) e separado (prefill aqui, decode num segundo processo com seu próprio pool, as linhas K/V movidas por memória compartilhada)</translation>
    </message>
    <message>
        <source>press Run: the two pools and the transfers between them are drawn here</source>
        <translation>aperte Rodar: os dois pools e as transferências entre eles são desenhados aqui</translation>
    </message>
    <message>
        <source>the transfers, one per request, in the order they arrived</source>
        <translation>as transferências, uma por requisição, na ordem em que chegaram</translation>
    </message>
    <message>
        <source>on the run&apos;s clock, per request: | an output token (co: colocated, split: disaggregated) · ▬ its transfer, from the pack&apos;s start to the rows in the decode pool</source>
        <translation>no relógio da execução, por requisição: | um token de saída (junto: num só pool, separado: desagregado) · ▬ sua transferência, do início do empacotamento até as linhas no pool de decode</translation>
    </message>
    <message>
        <source>{model}: {n} requests, blocks of {b}, {steps} steps, greedy · tokens {same} colocated and split · {bytes} moved from the prefill pool to the decode pool</source>
        <translation>{model}: {n} requisições, blocos de {b}, {steps} passos, greedy · tokens {same} num só pool e separados · {bytes} movidos do pool de prefill para o pool de decode</translation>
    </message>
    <message>
        <source>the same</source>
        <translation>iguais</translation>
    </message>
    <message>
        <source>NOT the same</source>
        <translation>DIFERENTES</translation>
    </message>
    <message>
        <source>transfer {k} / {n}</source>
        <translation>transferência {k} / {n}</translation>
    </message>
    <message>
        <source>prefill instance: pool of {n} blocks; request {r}&apos;s rows leave {k} of them</source>
        <translation>instância de prefill: pool de {n} blocos; as linhas da requisição {r} saem de {k} deles</translation>
    </message>
    <message>
        <source>decode instance: pool of {n} blocks, {held} held by {reqs} request(s) after they arrive</source>
        <translation>instância de decode: pool de {n} blocos, {held} ocupados por {reqs} requisição(ões) depois que elas chegam</translation>
    </message>
    <message>
        <source>request {r}: {k} block(s), {size} → pack {pack:.2f} ms (prefill pool → shared memory), unpack {unpack:.2f} ms (→ decode pool); in the decode pool {delivered:.1f} ms after the pack began (waiting for the decode loop included), at {at:.0f} ms on the run&apos;s clock</source>
        <translation>requisição {r}: {k} bloco(s), {size} → empacotar {pack:.2f} ms (pool de prefill → memória compartilhada), desempacotar {unpack:.2f} ms (→ pool de decode); no pool de decode {delivered:.1f} ms depois do início do empacotamento (a espera pelo laço de decode incluída), aos {at:.0f} ms no relógio da execução</translation>
    </message>
</context>
<context>
    <name>views.requests_timeline</name>
    <message>
        <source>waiting</source>
        <translation>esperando</translation>
    </message>
    <message>
        <source>prefill chunk</source>
        <translation>pedaço de prefill</translation>
    </message>
    <message>
        <source>decode</source>
        <translation>decode</translation>
    </message>
    <message>
        <source>recompute</source>
        <translation>recálculo</translation>
    </message>
    <message>
        <source>preempted</source>
        <translation>preemptada</translation>
    </message>
    <message>
        <source>&lt;b&gt;█ n&lt;/b&gt; prefill chunk of n positions · ▬ decode · ▨ recompute · &lt;span style=&apos;color:{muted}&apos;&gt;━&lt;/span&gt; waiting · &lt;span style=&apos;color:{error}&apos;&gt;✕&lt;/span&gt; preempted · &lt;span style=&apos;color:{accent}&apos;&gt;▯&lt;/span&gt; shown step · pool: &lt;span style=&apos;color:{accent}&apos;&gt;■&lt;/span&gt; held, ┄ + free still cached</source>
        <translation>&lt;b&gt;█ n&lt;/b&gt; pedaço de prefill de n posições · ▬ decode · ▨ recálculo · &lt;span style=&apos;color:{muted}&apos;&gt;━&lt;/span&gt; esperando · &lt;span style=&apos;color:{error}&apos;&gt;✕&lt;/span&gt; preemptada · &lt;span style=&apos;color:{accent}&apos;&gt;▯&lt;/span&gt; passo mostrado · pool: &lt;span style=&apos;color:{accent}&apos;&gt;■&lt;/span&gt; ocupados, ┄ + livres ainda em cache</translation>
    </message>
    <message>
        <source>▼ stored to a tier, ▲ loaded back</source>
        <translation>▼ guardado num nível, ▲ trazido de volta</translation>
    </message>
    <message>
        <source>{n} block(s) stored to {tier}</source>
        <translation>{n} bloco(s) gravado(s) no {tier}</translation>
    </message>
    <message>
        <source>{n} block(s) loaded from {tier}</source>
        <translation>{n} bloco(s) carregado(s) do {tier}</translation>
    </message>
    <message>
        <source>step {s} · {who}: {what}, {size}, {ms:.2f} ms</source>
        <translation>passo {s} · {who}: {what}, {size}, {ms:.2f} ms</translation>
    </message>
    <message>
        <source>in all: {what}</source>
        <translation>no total: {what}</translation>
    </message>
    <message>
        <source>… {n} more moves (the marks ▼ ▲ on the timeline)</source>
        <translation>… mais {n} movimentos (as marcas ▼ ▲ na linha do tempo)</translation>
    </message>
    <message>
        <source>r{n}: arrives at step {a}, TTFT {ttft:.1f} ms</source>
        <translation>r{n}: chega no passo {a}, TTFT {ttft:.1f} ms</translation>
    </message>
    <message>
        <source>, ITL median {med:.1f} ms, worst {worst:.1f} ms (step {s})</source>
        <translation>, ITL mediana {med:.1f} ms, pior {worst:.1f} ms (passo {s})</translation>
    </message>
    <message>
        <source>, preempted {k}× ({rows} rows recomputed)</source>
        <translation>, preemptada {k}× ({rows} linhas recalculadas)</translation>
    </message>
    <message>
        <source>prefix reuse of these requests: blocks of {b} reuse {blocks} of {total} prompt tokens; a radix tree (token-level, as SGLang) would reuse {radix}</source>
        <translation>reúso de prefixos destas requisições: blocos de {b} reutilizam {blocks} de {total} tokens do prompt; uma árvore radix (por token, como o SGLang) reutilizaria {radix}</translation>
    </message>
    <message>
        <source>step →</source>
        <translation>passo →</translation>
    </message>
    <message>
        <source>pool: {held}/{n} blocks held, {cached} cached</source>
        <translation>pool: {held}/{n} blocos ocupados, {cached} em cache</translation>
    </message>
    <message>
        <source>pool {held}/{n}</source>
        <translation>pool {held}/{n}</translation>
    </message>
    <message>
        <source>request {n}, step {s}</source>
        <translation>requisição {n}, passo {s}</translation>
    </message>
    <message>
        <source>{what}, positions {a}–{b}</source>
        <translation>{what}, posições {a}–{b}</translation>
    </message>
    <message>
        <source>, gives a token</source>
        <translation>, dá um token</translation>
    </message>
    <message>
        <source> · batch of {k}, {t} positions, {ms:.1f} ms</source>
        <translation> · lote de {k}, {t} posições, {ms:.1f} ms</translation>
    </message>
    <message>
        <source>press Run: each request over the steps is drawn here</source>
        <translation>aperte Rodar: cada requisição ao longo dos passos é desenhada aqui</translation>
    </message>
    <message>
        <source>pool: {held} of {n} blocks held, {cached} free but cached (dashed)</source>
        <translation>pool: {held} de {n} blocos ocupados, {cached} livres mas em cache (tracejados)</translation>
    </message>
    <message>
        <source>positions {a}–{b}; requests through this node: {n}</source>
        <translation>posições {a}–{b}; requisições que passam por este nó: {n}</translation>
    </message>
</context>
<context>
    <name>views.roofline</name>
    <message>
        <source>whole step</source>
        <translation>passo inteiro</translation>
    </message>
    <message>
        <source>weight matmuls</source>
        <translation>matmuls dos pesos</translation>
    </message>
    <message>
        <source>attention</source>
        <translation>atenção</translation>
    </message>
    <message>
        <source>all three</source>
        <translation>os três</translation>
    </message>
    <message>
        <source>hover a point: its step, lane, component, intensity and FLOP/s</source>
        <translation>passe o mouse sobre um ponto: seu passo, faixa, componente, intensidade e FLOP/s</translation>
    </message>
    <message>
        <source>this machine: measuring its peaks…</source>
        <translation>esta máquina: medindo seus picos…</translation>
    </message>
    <message>
        <source>show:</source>
        <translation>mostrar:</translation>
    </message>
    <message>
        <source>which counts place the points: the whole step, or the weight matmuls / attention alone</source>
        <translation>quais contagens posicionam os pontos: o passo inteiro, ou só as matmuls dos pesos / a atenção</translation>
    </message>
    <message>
        <source>Measure again</source>
        <translation>Medir de novo</translation>
    </message>
    <message>
        <source>time the matmul and the copy again (about a second, on the worker thread)</source>
        <translation>cronometrar de novo a matmul e a cópia (cerca de um segundo, na thread de trabalho)</translation>
    </message>
    <message>
        <source>left of the ridge: memory-bound · right of it: compute-bound</source>
        <translation>à esquerda da crista: limitado por memória · à direita: limitado por cálculo</translation>
    </message>
    <message>
        <source>this run on this machine</source>
        <translation>esta execução nesta máquina</translation>
    </message>
    <message>
        <source>a model on a GPU</source>
        <translation>um modelo numa GPU</translation>
    </message>
    <message>
        <source>this machine ({device}, {dtype}): measuring its peaks (a matmul and a copy)…</source>
        <translation>esta máquina ({device}, {dtype}): medindo seus picos (uma matmul e uma cópia)…</translation>
    </message>
    <message>
        <source>cached</source>
        <translation>em cache</translation>
    </message>
    <message>
        <source>measured in {seconds} s</source>
        <translation>medido em {seconds} s</translation>
    </message>
    <message>
        <source>this machine: {flops}FLOP/s · {bandwidth}B/s · ridge {ridge} FLOP/B ({how})</source>
        <translation>esta máquina: {flops}FLOP/s · {bandwidth}B/s · crista {ridge} FLOP/B ({how})</translation>
    </message>
    <message>
        <source>{name} ({device}, {dtype}, {key}): the best of a few {n}×{n} matmuls and of a few reads (sums) of {mib} MiB (bytes read), with {threads} threads as the runs use, measured {when}</source>
        <translation>{name} ({device}, {dtype}, {key}): o melhor de algumas matmuls {n}×{n} e de algumas leituras (somas) de {mib} MiB (bytes lidos), com {threads} threads como as execuções usam, medido {when}</translation>
    </message>
    <message>
        <source>this machine&apos;s peaks could not be measured: {error}</source>
        <translation>não foi possível medir os picos desta máquina: {error}</translation>
    </message>
    <message>
        <source>step {step} ({phase}) — {lanes}</source>
        <translation>passo {step} ({phase}) — {lanes}</translation>
    </message>
    <message>
        <source> · filled: whole step, hollow: weight matmuls, small: attention</source>
        <translation> · cheio: passo inteiro, vazado: matmuls dos pesos, pequeno: atenção</translation>
    </message>
    <message>
        <source>cursor</source>
        <translation>cursor</translation>
    </message>
    <message>
        <source>check (drafts verified in one forward)</source>
        <translation>conferência (rascunhos conferidos num único forward)</translation>
    </message>
    <message>
        <source>check: {rows} rows ({k} drafts), one weight read</source>
        <translation>conferência: {rows} linhas ({k} rascunhos), uma leitura dos pesos</translation>
    </message>
</context>
<context>
    <name>views.roofline_plot</name>
    <message>
        <source>arithmetic intensity (FLOP per byte moved)</source>
        <translation>intensidade aritmética (FLOP por byte movido)</translation>
    </message>
    <message>
        <source>ridge {ridge} FLOP/B</source>
        <translation>crista {ridge} FLOP/B</translation>
    </message>
    <message>
        <source>memory {bandwidth}B/s</source>
        <translation>memória {bandwidth}B/s</translation>
    </message>
    <message>
        <source>compute {flops}FLOP/s</source>
        <translation>cálculo {flops}FLOP/s</translation>
    </message>
</context>
<context>
    <name>views.roofline_preset</name>
    <message>
        <source>vendor figures: dense BF16 tensor FLOP/s and memory bandwidth (sources: docs/roofline.md)</source>
        <translation>números do fabricante: FLOP/s densos de tensor em BF16 e largura de banda da memória (fontes: docs/roofline.md)</translation>
    </message>
    <message>
        <source>n: tokens in the context after the step</source>
        <translation>n: tokens no contexto depois do passo</translation>
    </message>
    <message>
        <source>P: tokens the prefill computes at once (at most n)</source>
        <translation>P: tokens que o prefill calcula de uma vez (no máximo n)</translation>
    </message>
    <message>
        <source>sequences decoded together: the weights are read once for all of them</source>
        <translation>sequências decodificadas juntas: os pesos são lidos uma vez para todas</translation>
    </message>
    <message>
        <source>bits per weight (weight-only quantization: fewer bytes, the same tensor-core rate)</source>
        <translation>bits por peso (quantização só dos pesos: menos bytes, a mesma taxa dos tensor cores)</translation>
    </message>
    <message>
        <source>bits per cached K/V element</source>
        <translation>bits por elemento K/V em cache</translation>
    </message>
    <message>
        <source>model</source>
        <translation>modelo</translation>
    </message>
    <message>
        <source>on</source>
        <translation>em</translation>
    </message>
    <message>
        <source>batch</source>
        <translation>lote</translation>
    </message>
    <message>
        <source>context n</source>
        <translation>contexto n</translation>
    </message>
    <message>
        <source>prefill P</source>
        <translation>prefill P</translation>
    </message>
    <message>
        <source>weights bits</source>
        <translation>bits pesos</translation>
    </message>
    <message>
        <source>K/V bits</source>
        <translation>bits K/V</translation>
    </message>
    <message>
        <source>the two steps under the chip&apos;s roof (dense BF16)</source>
        <translation>os dois passos abaixo do teto do chip (BF16 denso)</translation>
    </message>
    <message>
        <source>n = {n} is past {model}&apos;s own context ({context}).</source>
        <translation>n = {n} passa do contexto do próprio {model} ({context}).</translation>
    </message>
    <message>
        <source>Weights + cache ({size}) do not fit in one {chip} ({memory}).</source>
        <translation>Pesos + cache ({size}) não cabem em uma {chip} ({memory}).</translation>
    </message>
    <message>
        <source>{n} tokens × {batch} sequences</source>
        <translation>{n} tokens × {batch} sequências</translation>
    </message>
    <message>
        <source>{n} tokens</source>
        <translation>{n} tokens</translation>
    </message>
    <message>
        <source>On one &lt;b&gt;{chip}&lt;/b&gt;, a &lt;b&gt;{model}&lt;/b&gt; decode step at {at} moves {bytes} ({weights} weights + {kv} K/V) for {flops}FLOP: {intensity} FLOP/byte against a ridge of {ridge} — at least &lt;b&gt;{time}&lt;/b&gt;, {limit}.</source>
        <translation>Em uma &lt;b&gt;{chip}&lt;/b&gt;, um passo de decode do &lt;b&gt;{model}&lt;/b&gt; com {at} move {bytes} ({weights} de pesos + {kv} de K/V) para {flops}FLOP: {intensity} FLOP/byte diante de uma crista de {ridge} — pelo menos &lt;b&gt;{time}&lt;/b&gt;, {limit}.</translation>
    </message>
    <message>
        <source>bytes</source>
        <translation>bytes</translation>
    </message>
    <message>
        <source>compute</source>
        <translation>cálculo</translation>
    </message>
    <message>
        <source>memory</source>
        <translation>memória</translation>
    </message>
    <message>
        <source>bound</source>
        <translation>limite</translation>
    </message>
    <message>
        <source>decode (1 token)</source>
        <translation>decode (1 token)</translation>
    </message>
    <message>
        <source>prefill ({n})</source>
        <translation>prefill ({n})</translation>
    </message>
</context>
<context>
    <name>views.roofline_words</name>
    <message>
        <source>the whole step</source>
        <translation>o passo inteiro</translation>
    </message>
    <message>
        <source>weight matmuls (projections, MLP, LM head)</source>
        <translation>matmuls dos pesos (projeções, MLP, camada de saída)</translation>
    </message>
    <message>
        <source>attention (q·Kᵀ and ·V)</source>
        <translation>atenção (q·Kᵀ e ·V)</translation>
    </message>
    <message>
        <source>memory-bound</source>
        <translation>limitado por memória</translation>
    </message>
    <message>
        <source>compute-bound</source>
        <translation>limitado por cálculo</translation>
    </message>
    <message>
        <source>memory</source>
        <translation>memória</translation>
    </message>
    <message>
        <source>compute</source>
        <translation>cálculo</translation>
    </message>
    <message>
        <source>1 row</source>
        <translation>1 linha</translation>
    </message>
    <message>
        <source>{n} rows</source>
        <translation>{n} linhas</translation>
    </message>
    <message>
        <source>{lane}: {rows}, {intensity} FLOP/byte, {achieved}FLOP/s</source>
        <translation>{lane}: {rows}, {intensity} FLOP/byte, {achieved}FLOP/s</translation>
    </message>
    <message>
        <source>step {step} ({phase}, {new} new of {context} rows) · lane {lane} · {component}: {flops}FLOP over {bytes}B moved = {intensity} FLOP/byte · {achieved}FLOP/s achieved in {ms} ms</source>
        <translation>passo {step} ({phase}, {new} de {context} linhas novas) · faixa {lane} · {component}: {flops}FLOP para {bytes}B movidos = {intensity} FLOP/byte · {achieved}FLOP/s alcançados em {ms} ms</translation>
    </message>
    <message>
        <source>step {step} ({phase}, {new} new, read {context} of {held} rows held) · lane {lane} · {component}: {flops}FLOP over {bytes}B moved = {intensity} FLOP/byte · {achieved}FLOP/s achieved in {ms} ms</source>
        <translation>passo {step} ({phase}, {new} novas, lidas {context} das {held} linhas guardadas) · faixa {lane} · {component}: {flops}FLOP para {bytes}B movidos = {intensity} FLOP/byte · {achieved}FLOP/s alcançados em {ms} ms</translation>
    </message>
</context>
<context>
    <name>views.scores</name>
    <message>
        <source>lowest accumulated score</source>
        <translation>menor pontuação acumulada</translation>
    </message>
    <message>
        <source>read least by the newest query</source>
        <translation>a menos lida pela query mais nova</translation>
    </message>
    <message>
        <source>outside the recent window</source>
        <translation>fora da janela recente</translation>
    </message>
    <message>
        <source>compressed at prefill</source>
        <translation>comprimida no prefill</translation>
    </message>
    <message>
        <source>{count} dropped</source>
        <translation>{count} descartadas</translation>
    </message>
    <message>
        <source>{count} dropped: {why}</source>
        <translation>{count} descartadas: {why}</translation>
    </message>
    <message>
        <source>bars: each held row&apos;s score, the attention the policy ranks it by; struck rows: dropped after this step</source>
        <translation>barras: a pontuação de cada linha guardada, a atenção pela qual a política a ordena; linhas riscadas: descartadas após este passo</translation>
    </message>
    <message>
        <source>rows each K/V head holds · {lane} · layer {layer}</source>
        <translation>linhas que cada cabeça de K/V guarda · {lane} · camada {layer}</translation>
    </message>
    <message>
        <source>one row per K/V head, top to bottom; a cell per position:
filled where that head holds the row, red where it dropped it this step</source>
        <translation>uma linha por cabeça de K/V, de cima para baixo; uma célula por posição:
preenchida onde essa cabeça guarda a linha, vermelha onde a descartou neste passo</translation>
    </message>
</context>
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
<context>
    <name>window</name>
    <message>
        <source>kvsim — the KV cache, step by step</source>
        <translation>kvsim — o KV cache, passo a passo</translation>
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
        <source>Save run…</source>
        <translation>Salvar execução…</translation>
    </message>
    <message>
        <source>Open run…</source>
        <translation>Abrir execução…</translation>
    </message>
    <message>
        <source>Lanes only</source>
        <translation>Só as faixas</translation>
    </message>
    <message>
        <source>Lane sets (L: the next one)</source>
        <translation>Conjuntos de faixas (L: o próximo)</translation>
    </message>
    <message>
        <source>Free-running lanes (each continues on its own choice)</source>
        <translation>Faixas livres (cada uma segue a própria escolha)</translation>
    </message>
    <message>
        <source>K/V error vs exact (lossy lanes)</source>
        <translation>Erro de K/V vs exato (faixas com perda)</translation>
    </message>
    <message>
        <source>Default layout</source>
        <translation>Disposição padrão</translation>
    </message>
    <message>
        <source>the KV cache</source>
        <translation>o KV cache</translation>
    </message>
    <message>
        <source>kvsim — {model} — {what}</source>
        <translation>kvsim — {model} — {what}</translation>
    </message>
    <message>
        <source>prompt: {n} tokens · press Step (→) or Play (Space) · Back (←) · Reset (Home) · F: lanes only</source>
        <translation>prompt: {n} tokens · aperte Avançar (→) ou Reproduzir (Espaço) · Voltar (←) · Recomeçar (Home) · F: só as faixas</translation>
    </message>
    <message>
        <source>prompt: {n} tokens · → step · Space play · ← back · ? keys</source>
        <translation>prompt: {n} tokens · → avança · Espaço reproduz · ← volta · ? teclas</translation>
    </message>
</context>
<context>
    <name>worker</name>
    <message>
        <source>bundled model {model} not available ({error}); using a random model</source>
        <translation>modelo embutido {model} indisponível ({error}); usando um modelo aleatório</translation>
    </message>
    <message>
        <source>could not load model {model}: {error}</source>
        <translation>não foi possível carregar o modelo {model}: {error}</translation>
    </message>
    <message>
        <source>no model is loaded</source>
        <translation>nenhum modelo carregado</translation>
    </message>
    <message>
        <source>could not start the run: {error}</source>
        <translation>não foi possível iniciar a execução: {error}</translation>
    </message>
    <message>
        <source>step {n} failed: {error}</source>
        <translation>o passo {n} falhou: {error}</translation>
    </message>
</context>
</TS>
