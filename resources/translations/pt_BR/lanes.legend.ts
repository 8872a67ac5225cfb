<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.legend</name>
    <message>
        <source>K, V, q: a diverging scale, the same for every lane (0 in the middle)
K is stored after RoPE (rotated by its position) in RoPE models
attention p: the probability a query gives a key (colour ∝ √p, so small weights show)
hatched: masked — a future position, no query may see it
cross-hatched: not seen by this lane — outside its window, or evicted
dim rows: read from the cache (not computed this step)</source>
        <translation>K, V, q: uma escala divergente, a mesma para todas as lanes (0 no meio)
K é guardado após RoPE (girado pela sua posição) nos modelos com RoPE
atenção p: a probabilidade que uma query dá a uma chave (cor ∝ √p, para que pesos pequenos apareçam)
hachurado: mascarado — uma posição futura, nenhuma query pode vê-la
quadriculado: não visto por esta lane — fora da janela dela, ou descartado
linhas esmaecidas: lidas da cache (não calculadas neste passo)</translation>
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
        <translation>esmaecido = lido da cache</translation>
    </message>
    <message>
        <source>cached</source>
        <translation>na cache</translation>
    </message>
</context>
</TS>
