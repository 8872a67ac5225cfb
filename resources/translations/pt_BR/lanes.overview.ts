<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="pt_BR">
<context>
    <name>views.overview</name>
    <message>
        <source>every query head of the selected layer; a frame&apos;s colour is its K/V head: heads framed alike
share one K and V (GQA), so the cache holds H_kv heads, not H</source>
        <translation>todas as cabeças de query da camada escolhida; a cor da moldura é a da sua cabeça K/V: cabeças com a mesma moldura
compartilham um K e um V (GQA), então a cache guarda H_kv cabeças, não H</translation>
    </message>
    <message>
        <source>GQA: {group} share each</source>
        <translation>GQA: {group} compartilham cada</translation>
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
</TS>
