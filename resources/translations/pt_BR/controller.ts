<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>controller</name>
    <message>
        <source>loading model {model} …</source>
        <translation>carregando o modelo {model} …</translation>
    </message>
    <message>
        <source>free-running lanes: each continues on its own choice — a new live run</source>
        <translation>lanes livres: cada uma segue a própria escolha — uma nova execução ao vivo</translation>
    </message>
    <message>
        <source>lockstep lanes: every lane continues on the reference&apos;s token — a new live run</source>
        <translation>lanes em sincronia: todas seguem o token da referência — uma nova execução ao vivo</translation>
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
</TS>
