<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.memory_words</name>
    <message>
        <source>recomputes the whole prefix every step: holds nothing between steps</source>
        <translation>recalcula o prefixo inteiro a cada passo: não guarda nada entre os passos</translation>
    </message>
    <message>
        <source>{n} layers × </source>
        <translation>{n} camadas × </translation>
    </message>
    <message>
        <source>{newest} newest tokens are still in full precision ({bits} bits: +{residual} B) and the {quantized} quantized ones carry scales and zero points (+{overhead} B)</source>
        <translation>os {newest} tokens mais novos ainda estão em precisão total ({bits} bits: +{residual} B) e os {quantized} quantizados levam escalas e pontos zero (+{overhead} B)</translation>
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
</TS>
