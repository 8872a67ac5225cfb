"""The web page a run is replayed in (``kvsim.engine.html_page`` fills it): its markup, styles and script, inline.

``PAGE`` has two holes: ``{{LANG}}`` (the html element's language) and ``{{DATA}}`` (the run, as escaped JSON in a
``<script type="application/json">`` element, which never runs). ``{{CSP_SCRIPT}}`` is the SHA-256 of ``SCRIPT``:
the Content-Security-Policy lets only this script run and forbids every request, so even a page someone edited
to inject a script tag, or an image from the network, does nothing. The script writes text only through
``textContent`` (never markup), and draws the tables and attention rows on canvases.
"""

from __future__ import annotations

import base64
import hashlib

STYLE = r"""
:root { --bg:#fbfbf8; --fg:#1d1f23; --muted:#5b6270; --card:#ffffff; --line:#d5d8de; --accent:#1f6fd1;
  --prefill:#e3ecfa; --gen:#fde9c9; --now:#ffcf5a; --masked:#c9ccd3; --bar:#1f6fd1; color-scheme: light dark; }
@media (prefers-color-scheme: dark) {
  :root { --bg:#15171b; --fg:#e8eaee; --muted:#a3aab6; --card:#1e2127; --line:#353a44; --accent:#6aa6ff;
    --prefill:#22324d; --gen:#4a3a1d; --now:#8a6a12; --masked:#3a3f49; --bar:#6aa6ff; }
}
* { box-sizing: border-box; }
html, body { margin:0; background:var(--bg); color:var(--fg);
  font: 15px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; }
body { padding: 10px; max-width: 1900px; margin: 0 auto; }
header { display:flex; flex-wrap:wrap; gap:6px 14px; align-items:baseline; justify-content:space-between; }
h1 { font-size: 1.25rem; margin: 0; overflow-wrap:anywhere; min-width:0; }
h2 { font-size: 1.05rem; margin: 0 0 2px 0; overflow-wrap:anywhere; }
p { margin: 2px 0; }
.muted { color: var(--muted); font-size: 0.85rem; overflow-wrap:anywhere; }
button, select { font: inherit; color: var(--fg); background: var(--card); border: 1px solid var(--line);
  border-radius: 6px; padding: 6px 10px; min-height: 40px; min-width: 40px; }
button:focus-visible, select:focus-visible, input:focus-visible { outline: 2px solid var(--accent); }
#controls { display:flex; flex-wrap:wrap; gap:6px; align-items:center; margin:8px 0; }
#scrub { flex: 1 1 160px; min-width: 120px; min-height: 32px; }
#where { font-variant-numeric: tabular-nums; min-width: 0; overflow-wrap:anywhere; }
#text { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:6px 8px;
  max-height: 7.5em; overflow-y:auto; overflow-wrap:anywhere; white-space: pre-wrap; }
.tok { border-radius:3px; padding:0 1px; }
.tok.prefill { background: var(--prefill); }
.tok.gen { background: var(--gen); }
.tok.now { background: var(--now); outline: 1px solid var(--accent); }
.tok.later { display:none; }
#legend { display:flex; flex-wrap:wrap; gap:4px 12px; margin:4px 0; }
.sw { display:inline-block; width: 0.9em; height: 0.9em; border-radius: 2px; vertical-align: -0.1em; margin-right: 4px; }
#lanes { display:grid; gap:10px; grid-template-columns: repeat(auto-fit, minmax(min(100%, 300px), 1fr)); margin-top:8px; }
.lane { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:8px; min-width:0; }
.tables { display:grid; grid-template-columns: 1fr 1fr; gap: 6px; }
figure { margin:0; min-width:0; }
figcaption { font-size: 0.8rem; color: var(--muted); overflow-wrap:anywhere; }
canvas { width:100%; display:block; image-rendering: pixelated; background: var(--bg);
  border: 1px solid var(--line); border-radius: 3px; }
canvas.kvt { height: 150px; }
canvas.att { height: 56px; }
dl { display:grid; grid-template-columns: minmax(0, 1fr) auto; gap: 1px 10px; margin: 6px 0 0 0; }
dt { color: var(--muted); font-size: 0.85rem; overflow-wrap:anywhere; min-width:0; }
dd { margin:0; text-align:right; font-variant-numeric: tabular-nums; overflow-wrap:anywhere; }
.bill { margin-top: 6px; }
.billbar { height: 10px; background: var(--line); border-radius: 5px; overflow: hidden; }
.billbar > div { height: 100%; background: var(--bar); width: 0; }
footer { margin-top: 10px; }
#dropped:empty { display:none; }
@media (max-width: 420px) { body { padding: 6px; font-size: 14px; } canvas.kvt { height: 110px; } }
@media (min-width: 1600px) { html, body { font-size: 17px; } canvas.kvt { height: 220px; } }
"""

SCRIPT = r"""
"use strict";
(function () {
const D = JSON.parse(document.getElementById("kvsim-data").textContent);
const WORDS = {
  en: { recorded: "recorded by kvsim {v} on {m}, {d}", settings: "settings", step: "step {s} of {n}",
    prefill: "prefill", decode: "decode", first: "First step (Home)", prev: "Step back (←, PgUp)",
    play: "Play / pause (Space)", next: "Step (→, PgDn)", last: "Last step (End)", scrub: "Step",
    text: "The text", prompt: "prompt (prefill)", generated: "generated", now: "this step's token",
    k: "K rows: {r}", v: "V rows: {r}",
    attn: "attention of position {p} over the keys it read (layer {l}, head {h}; grey: not read)",
    computed: "K/V rows computed so far (Σt)", n: "tokens in the text (n)", read: "keys read this step",
    ms: "time of this step (measured)", total: "time of all steps so far", bill: "cache held: {t} tokens, {b}",
    overhead: "of which not K/V values: {b}", view: "layer / head", lang: "Português",
    dropped: "Left out to stay under {mb} MB: the attention and K/V of {n} of the {t} (layer, head) views "
      + "(the page keeps {k}, from layer 0 head 0 on).",
    keys: "→ / PgDn step · ← / PgUp back · Space play · Home first · swipe on a phone",
    reference: "the run's tokens come from lane {r}", views: "layer {l}, head {h}" },
  pt_BR: { recorded: "gravado pelo kvsim {v} no {m}, {d}", settings: "configurações", step: "passo {s} de {n}",
    prefill: "prefill", decode: "decode", first: "Primeiro passo (Home)", prev: "Voltar um passo (←, PgUp)",
    play: "Tocar / pausar (Espaço)", next: "Avançar um passo (→, PgDn)", last: "Último passo (End)",
    scrub: "Passo", text: "O texto", prompt: "prompt (prefill)", generated: "gerado",
    now: "o token deste passo", k: "linhas de K: {r}", v: "linhas de V: {r}",
    attn: "atenção da posição {p} sobre as chaves que leu (camada {l}, cabeça {h}; cinza: não lidas)",
    computed: "linhas K/V calculadas até aqui (Σt)", n: "tokens no texto (n)", read: "chaves lidas neste passo",
    ms: "tempo deste passo (medido)", total: "tempo de todos os passos até aqui",
    bill: "o cache guarda: {t} tokens, {b}", overhead: "dos quais não são valores K/V: {b}",
    view: "camada / cabeça", lang: "English",
    dropped: "Deixado de fora para ficar abaixo de {mb} MB: a atenção e o K/V de {n} das {t} vistas (camada, cabeça) "
      + "(a página guarda {k}, a partir da camada 0, cabeça 0).",
    keys: "→ / PgDn avança · ← / PgUp volta · Espaço toca · Home início · deslize no celular",
    reference: "os tokens da execução vêm da faixa {r}", views: "camada {l}, cabeça {h}" }
};
let lang = D.lang in WORDS ? D.lang : "en";
function t(key, args) {
  let s = WORDS[lang][key];
  for (const k in (args || {})) s = s.split("{" + k + "}").join(String(args[k]));
  return s;
}
function decode(name) {
  const [kind, b64] = D.arrays[name];
  const bin = atob(b64), bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return kind === "f32" ? new Float32Array(bytes.buffer) : new Int32Array(bytes.buffer);
}
const cache = {};
function arr(name) { return cache[name] || (cache[name] = decode(name)); }
const P = D.prompt_len, N = D.n_steps, W = D.shape.width, ROWS = P + N - 1;
const G = D.shape.heads / D.shape.kv_heads;
let step = 0, view = 0, timer = null;
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function fmt(x, digits) {
  return new Intl.NumberFormat(lang.replace("_", "-"), { maximumFractionDigits: digits || 0 }).format(x);
}
function bytes(b) {
  const u = [[1e9, "GB"], [1e6, "MB"], [1e3, "kB"]];
  for (const [f, n] of u) if (b >= f) return fmt(b / f, 1) + " " + n;
  return fmt(b) + " B";
}
function attnOffset(s) { return s * P + (s * (s - 1)) / 2; }  // rows 0..s-1 hold P, P+1, … keys
function attentionRow(j, s) {
  const [l, h] = D.views[view];
  const a = arr(D.lanes[j].attention[l + "," + h]);
  return a.subarray(attnOffset(s), attnOffset(s) + P + s);
}
function tableAt(j, which, s) {
  const [l, h] = D.views[view], g = Math.floor(h / G), key = l + "," + g;
  const base = arr(D.kv[key][which]), n = P + s;
  const out = new Float32Array(base.subarray(0, n * W));
  const own = D.lanes[j].kv[key];
  if (own) {
    const st = arr(own.step), pos = arr(own.pos), rows = arr(own[which]);
    for (let i = 0; i < st.length; i++) {
      if (st[i] > s) break;
      if (pos[i] < n) out.set(rows.subarray(i * W, (i + 1) * W), pos[i] * W);
    }
  }
  return out;
}
function readMask(j, s) {  // true where lane j read key position p at step s
  const n = P + s, spans = D.lanes[j].spans[s], m = new Uint8Array(n);
  if (spans === null) { m.fill(1); return m; }
  for (const [a, b] of spans) for (let p = a; p < Math.min(b, n); p++) m[p] = 1;
  return m;
}
function css(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }
function diverging(x) {  // -1..1 → blue, white, red
  const c = Math.max(-1, Math.min(1, x)), a = Math.abs(c);
  const lo = [255, 255, 255], hi = c < 0 ? [44, 104, 196] : [200, 54, 54];
  return lo.map((v, i) => Math.round(v + (hi[i] - v) * Math.sqrt(a)));
}
function drawTable(canvas, table, n, level, mask) {
  canvas.width = W; canvas.height = ROWS;
  const ctx = canvas.getContext("2d"), img = ctx.createImageData(W, ROWS);
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < W; c++) {
      const [R, G2, B] = diverging(table[r * W + c] / level), o = 4 * (r * W + c);
      img.data[o] = R; img.data[o + 1] = G2; img.data[o + 2] = B; img.data[o + 3] = mask[r] ? 255 : 50;
    }
  }
  ctx.putImageData(img, 0, 0);
}
function drawAttention(canvas, row) {
  const n = row.length;
  canvas.width = Math.max(ROWS, 1) * 4; canvas.height = 56;
  const ctx = canvas.getContext("2d"), w = canvas.width / Math.max(ROWS, 1);
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  let top = 0;
  for (const x of row) if (x === x && x > top) top = x;
  for (let p = 0; p < n; p++) {
    const x = row[p];
    if (x !== x) { ctx.fillStyle = css("--masked"); ctx.fillRect(p * w, 50, w - 0.5, 6); continue; }
    const hgt = Math.max(1, (top > 0 ? Math.sqrt(x / top) : 0) * 54);
    ctx.fillStyle = css("--bar"); ctx.fillRect(p * w, 56 - hgt, Math.max(1, w - 0.5), hgt);
  }
  canvas.dataset.values = JSON.stringify(Array.from(row, (x) => (x === x ? x : null)));
}
const $ = (id) => document.getElementById(id);
const cards = [];
function build() {
  document.title = "kvsim — " + D.model;
  $("title").textContent = "kvsim — " + D.model;
  $("recorded").textContent = t("recorded", { v: D.version, m: D.model, d: D.date });
  const s = Object.entries(D.settings).map(([k, v]) => k + " " + v).join(" · ");
  $("settings").textContent = t("settings") + ": " + s + " · " + t("reference", { r: D.reference });
  $("prompt").textContent = D.prompt;
  $("lang").textContent = t("lang");
  for (const [id, key] of [["first", "first"], ["prev", "prev"], ["play", "play"], ["next", "next"], ["last", "last"]]) {
    $(id).title = t(key); $(id).setAttribute("aria-label", t(key));
  }
  $("scrub").setAttribute("aria-label", t("scrub"));
  $("scrub").max = String(N - 1);
  $("textlabel").textContent = t("text");
  $("lg-prompt").textContent = t("prompt"); $("lg-gen").textContent = t("generated"); $("lg-now").textContent = t("now");
  $("keys").textContent = t("keys");
  $("viewlabel").textContent = t("view");
  const sel = $("view");
  sel.replaceChildren(...D.views.map(([l, h], i) => {
    const o = el("option", "", t("views", { l, h })); o.value = i; return o;
  }));
  sel.value = String(view);
  const b = D.budget, n = b.recorded - b.views;
  $("dropped").textContent = n > 0 ? t("dropped", { mb: fmt(b.mb, 2), n, t: b.recorded, k: b.views }) : "";
  const text = $("text");
  text.replaceChildren(...D.tokens.map((tok, i) => el("span", "tok " + (i < P ? "prefill" : "gen"), tok)));
  const lanes = $("lanes");
  lanes.replaceChildren();
  cards.length = 0;
  D.lanes.forEach((lane, j) => {
    const c = el("section", "lane"); c.dataset.lane = j;
    c.append(el("h2", "", lane.title === lane.name ? lane.name : lane.title + " (" + lane.name + ")"));
    c.append(el("p", "muted", lane.explanation));
    const tables = el("div", "tables");
    const fk = el("figure"), fv = el("figure");
    const kc = el("canvas", "kvt"), vc = el("canvas", "kvt");
    const kl = el("figcaption", "kv-rows"), vl = el("figcaption");
    fk.append(kc, kl); fv.append(vc, vl); tables.append(fk, fv);
    const fa = el("figure", "attn"), ac = el("canvas", "att"), al = el("figcaption");
    fa.append(ac, al);
    const dl = el("dl"), items = {};
    for (const key of ["computed", "n", "read", "ms", "total"]) {
      const dt = el("dt", "", t(key)), dd = el("dd", key);
      dl.append(dt, dd); items[key] = dd;
    }
    const bill = el("div", "bill"), bl = el("p", "muted billtext"), bo = el("p", "muted"), bar = el("div", "billbar");
    const fill = el("div"); bar.append(fill); bill.append(bl, bo, bar);
    c.append(tables, fa, dl, bill);
    lanes.append(c);
    cards.push({ kc, vc, kl, vl, ac, al, items, bl, bo, fill });
  });
  show();
}
const maxBytes = Math.max(1, ...D.lanes.flatMap((l) => l.cache_bytes));
function show() {
  const n = P + step, [l, h] = D.views[view], g = Math.floor(h / G), level = D.kv[l + "," + g].level;
  $("scrub").value = String(step);
  $("where").textContent = t("step", { s: step, n: N - 1 }) + " · " + t(D.phases[step]);
  document.querySelectorAll("#text .tok").forEach((e, i) => {
    e.classList.toggle("now", i === P + step);
    e.classList.toggle("later", i > P + step);
  });
  const now = document.querySelector("#text .now");
  if (now && now.scrollIntoView) now.scrollIntoView({ block: "nearest" });
  D.lanes.forEach((lane, j) => {
    const c = cards[j], mask = readMask(j, step);
    drawTable(c.kc, tableAt(j, "k", step), n, level, mask);
    drawTable(c.vc, tableAt(j, "v", step), n, level, mask);
    c.kl.textContent = t("k", { r: n }); c.kl.dataset.value = n;
    c.vl.textContent = t("v", { r: n });
    drawAttention(c.ac, attentionRow(j, step));
    c.al.textContent = t("attn", { p: n - 1, l, h });
    const total = lane.ms.slice(0, step + 1).reduce((a, b) => a + b, 0);
    const values = { computed: lane.computed[step], n: P + step + 1, read: lane.context[step],
      ms: lane.ms[step], total };
    for (const k in values) {
      c.items[k].dataset.value = values[k];
      c.items[k].textContent = k === "ms" || k === "total" ? fmt(values[k], 2) + " ms" : fmt(values[k]);
    }
    const b = lane.cache_bytes[step];
    c.bl.textContent = t("bill", { t: fmt(lane.cache_tokens[step]), b: bytes(b) });
    c.bl.dataset.value = b;
    c.bo.textContent = lane.overhead[step] ? t("overhead", { b: bytes(lane.overhead[step]) }) : "";
    c.fill.style.width = (100 * b / maxBytes).toFixed(2) + "%";
  });
  document.body.dataset.step = step;
}
function go(s) { step = Math.max(0, Math.min(N - 1, s)); show(); }
function play() {
  if (timer) { clearInterval(timer); timer = null; $("play").textContent = "▶"; return; }
  if (step >= N - 1) go(0);
  $("play").textContent = "❚❚";
  timer = setInterval(() => { if (step >= N - 1) play(); else go(step + 1); }, 700);
}
$("first").onclick = () => go(0);
$("prev").onclick = () => go(step - 1);
$("next").onclick = () => go(step + 1);
$("last").onclick = () => go(N - 1);
$("play").onclick = play;
$("scrub").oninput = (e) => go(Number(e.target.value));
$("view").onchange = (e) => { view = Number(e.target.value); show(); };
$("lang").onclick = () => {
  lang = lang === "en" ? "pt_BR" : "en";
  document.documentElement.lang = lang.replace("_", "-");
  build();
};
document.addEventListener("keydown", (e) => {
  if (e.target && (e.target.tagName === "SELECT" || e.target.tagName === "INPUT") && e.key !== " ") return;
  const k = e.key;
  if (k === "ArrowRight" || k === "PageDown") go(step + 1);
  else if (k === "ArrowLeft" || k === "PageUp") go(step - 1);
  else if (k === "Home") go(0);
  else if (k === "End") go(N - 1);
  else if (k === " " || k === "Spacebar") play();
  else return;
  e.preventDefault();
});
let touchX = null;
document.addEventListener("touchstart", (e) => { touchX = e.touches[0].clientX; }, { passive: true });
document.addEventListener("touchend", (e) => {
  if (touchX === null) return;
  const dx = e.changedTouches[0].clientX - touchX; touchX = null;
  if (Math.abs(dx) > 40) go(step + (dx < 0 ? 1 : -1));
}, { passive: true });
build();
})();
"""

CSP_SCRIPT = "sha256-" + base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")

PAGE = (
    """<!DOCTYPE html>
<html lang="{{LANG}}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src '"""
    + CSP_SCRIPT
    + """'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'">
<meta name="generator" content="kvsim">
<title>kvsim</title>
<style>"""
    + STYLE
    + """</style>
</head>
<body>
<header>
<div style="min-width:0">
<h1 id="title">kvsim</h1>
<p class="muted" id="recorded"></p>
<p class="muted" id="settings"></p>
</div>
<button id="lang" type="button"></button>
</header>
<p class="muted" id="prompt" hidden></p>
<nav id="controls">
<button id="first" type="button">«</button><button id="prev" type="button">‹</button><button id="play" type="button">▶</button>
<button id="next" type="button">›</button><button id="last" type="button">»</button>
<input id="scrub" type="range" min="0" max="0" step="1" value="0">
<span id="where"></span>
</nav>
<h2 id="textlabel"></h2>
<div id="legend"><span><span class="sw" style="background:var(--prefill)"></span><span id="lg-prompt"></span></span>
<span><span class="sw" style="background:var(--gen)"></span><span id="lg-gen"></span></span>
<span><span class="sw" style="background:var(--now)"></span><span id="lg-now"></span></span></div>
<div id="text"></div>
<div id="lanes"></div>
<footer>
<label><span id="viewlabel"></span> <select id="view"></select></label>
<p class="muted" id="keys"></p>
<p class="muted" id="dropped"></p>
</footer>
<script type="application/json" id="kvsim-data">{{DATA}}</script>
<script>"""
    + SCRIPT
    + """</script>
</body>
</html>
"""
)
