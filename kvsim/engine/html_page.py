"""A run as one self-contained web page: the records of a ``Trace`` replayed in any browser, nothing installed.

``page_html(trace)`` returns the page (``html_template.PAGE`` with the run's data filled in) and what it left out;
``write_page(trace, path)`` writes it atomically and reads it back. The page computes nothing the run did not
record: every number it shows is here, taken from the records — the K/V rows each lane held (the shared rows, a
lossy lane's own rows as the changes it recorded step by step, the keys a windowed lane read), the attention row of
each step's last query (derived from the recorded Q and K exactly as the app derives it: softmax(q·Kᵀ/√d) over the
keys the lane read, NaN where it saw none), the cumulative K/V rows computed, the measured times and the cache's bytes.

Compact: arrays are float32/int32, base64 in one JSON object; lanes with the same attention rows share one array.
A size budget (``budget_bytes``) is checked: the attention of (layer, head) pairs is kept in order — layer 0 head 0
first, the view the app opens on — until the next would pass the budget; what was left out is said in the page
and returned (the CLI prints it).

Safe: the JSON is embedded with ``<``, ``>``, ``&``, U+2028 and U+2029 escaped (no ``</script>`` or ``<!--`` can
close or confuse the script element), the page's script writes text only through ``textContent``, and a
Content-Security-Policy forbids every request (no network: scripts and styles inline, nothing else loads).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..core.atomic import atomic_target, check_target
from ..core.masking import visibility
from ..models.config import ModelConfig
from .html_template import PAGE
from .records import StepRecord
from .trace import Trace

__all__ = ["DEFAULT_BUDGET_BYTES", "PageReport", "embed_json", "page_data", "page_html", "read_page_data", "write_page"]

DEFAULT_BUDGET_BYTES = 10_000_000  # the figure for a 200-step, 3-lane SmolLM2 run
_DATA_ID = "kvsim-data"
_DATA_RE = re.compile(r'<script type="application/json" id="kvsim-data">(.*?)</script>', re.S)
LANGUAGES = ("en", "pt_BR")


@dataclass(frozen=True)
class PageReport:
    """What ``write_page`` wrote: the file, its size, the budget, the (layer, head) views kept and what was dropped."""

    path: Path
    size_bytes: int
    budget_bytes: int
    views: int
    views_recorded: int
    dropped: tuple[str, ...] = field(default=())


# ====================================================================== the run's numbers
def _b64(array: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")


class _Arrays:
    """Typed arrays by name, base64; an array equal to one already added is shared, not added twice."""

    def __init__(self) -> None:
        self.items: dict[str, list[Any]] = {}
        self._by_digest: dict[bytes, str] = {}
        self.size = 0

    def add(self, name: str, array: np.ndarray) -> str:
        kind = {"f": "f32", "i": "i32", "u": "i32", "b": "i32"}[array.dtype.kind]
        array = np.ascontiguousarray(array, dtype="<f4" if kind == "f32" else "<i4")  # the browser reads little-endian
        digest = hashlib.blake2b(array.tobytes(), digest_size=16).digest() + kind.encode()
        if digest in self._by_digest:
            return self._by_digest[digest]
        encoded = _b64(array)
        self.items[name] = [kind, encoded]
        self._by_digest[digest] = name
        self.size += len(encoded) + len(name) + 16
        return name


def _dict(value: object) -> dict[Any, Any]:
    """A metadata entry that should be a dict, or an empty one (a damaged or older trace)."""
    return value if isinstance(value, dict) else {}


def _lane_infos(meta: dict[str, Any], records: list[StepRecord]) -> list[dict[str, Any]]:
    out = []
    found = meta.get("lanes")
    described: list[Any] = found if isinstance(found, list) else []
    for j, lane in enumerate(records[0].lanes):
        d = described[j] if j < len(described) and isinstance(described[j], dict) else {}
        window = d.get("window")
        out.append(
            {
                "name": str(lane.name),
                "title": str(d.get("title", lane.name)),
                "explanation": str(d.get("explanation", "")),
                "policy": str(d.get("policy", lane.policy)),
                "reuses_past": bool(d.get("reuses_past", True)),
                "lossy": bool(d.get("lossy", False)),
                "window": int(window) if isinstance(window, int) else None,
                "sinks": int(d.get("sinks", 0) or 0),
            }
        )
    return out


def _own_rows(lossy: bool, j: int, records: list[StepRecord]) -> bool:
    """The lane's rows differ from the shared ones (as the app's session decides it: lossy, or rows at the prefill)."""
    return lossy or records[0].lanes[j].rows is not None


def attention_row(
    q: np.ndarray, k_table: np.ndarray, query: int, keys: np.ndarray, model_window: int | None, lane: dict[str, Any], scale: float
) -> np.ndarray:
    """The attention probabilities (length query+1) of the query at position ``query`` over the key rows
    ``k_table[keys]`` it read; NaN where it read or saw nothing. As the app derives them (float64 softmax)."""
    qv = np.asarray(q, dtype=np.float64)
    kv = np.asarray(k_table[keys], dtype=np.float64)
    scores = (kv @ qv) / np.sqrt(scale)
    visible = visibility(np.array([query]), keys, model_window, lane["window"], lane["sinks"])[0]
    scores = np.where(visible, scores, -np.inf)
    top = scores.max() if scores.size else 0.0
    top = top if np.isfinite(top) else 0.0
    e = np.exp(scores - top)
    total = e.sum()
    probs = np.where(visible, e / (total if total > 0 else 1.0), np.nan).astype(np.float32)
    row = np.full(query + 1, np.nan, dtype=np.float32)
    seen = keys <= query
    row[keys[seen]] = probs[seen]
    return row


def _read_keys(record: StepRecord, j: int) -> np.ndarray:
    lane = record.lanes[j]
    return lane.read_positions(record.n_tokens)


def _lane_tables(
    records: list[StepRecord], j: int, own: bool, k_all: np.ndarray, layer: int, g: int
) -> Iterator[tuple[int, np.ndarray]]:
    """Lane ``j``'s K table of (layer, kv head ``g``) after each step (one array, updated in place)."""
    table = k_all[layer, g].copy()
    for s, r in enumerate(records):
        rows = r.lanes[j].rows
        if own and rows is not None:
            table[np.asarray(rows.positions)] = np.asarray(rows.k[layer, g], dtype=np.float32)
        yield s, table


def _query_rows(records: list[StepRecord], j: int, own: bool) -> list[np.ndarray]:
    """Lane ``j``'s queries of each step's last position: (L, H, D) each (a lossy lane's own, else the shared)."""
    out = []
    for r in records:
        rows = r.lanes[j].rows
        q = rows.q if own and rows is not None else r.q
        out.append(np.asarray(q[:, :, -1, :], dtype=np.float32))
    return out


def _kv_level(k_all: np.ndarray, v_all: np.ndarray, prompt_len: int, layer: int, g: int) -> float:
    """The app's colour level: the 99th percentile of |K|, |V| of the prompt's rows (the same for every lane)."""
    rows = np.concatenate([k_all[layer, g, : max(prompt_len, 1)].ravel(), v_all[layer, g, : max(prompt_len, 1)].ravel()])
    return float(np.percentile(np.abs(rows), 99)) or 1.0


def _date(created: str) -> str:
    """A trace's ``created`` (2026-11-29T19:23:33+0000) as people read it: 2026-11-29 19:23 UTC."""
    m = re.fullmatch(r"(\d{4}-\d\d-\d\d)T(\d\d:\d\d)(?::\d\d)?(?:\+0000|Z)", created)
    return f"{m.group(1)} {m.group(2)} UTC" if m else created


def _settings(meta: dict[str, Any], n_steps: int, lanes: list[dict[str, Any]]) -> dict[str, str]:
    sampling = _dict(meta.get("sampling"))
    versions = _dict(meta.get("versions"))
    out = {
        "lanes": ",".join(lane["name"] for lane in lanes),
        "steps": str(n_steps),
        "temperature": str(sampling.get("temperature", "")),
        "seed": str(sampling.get("seed", "")),
        "device": str(meta.get("device", "")),
        "dtype": str(meta.get("dtype", "")),
        "torch": str(versions.get("torch", "")),
    }
    return {k: v for k, v in out.items() if v not in ("", "None")}


def page_data(trace: Trace, *, lang: str = "en", budget_bytes: int = DEFAULT_BUDGET_BYTES) -> dict[str, Any]:
    """Everything the page shows, as one JSON-ready dict (arrays base64); ``["dropped"]`` says what did not fit."""
    records, meta = trace.records, trace.meta
    if not records:
        raise ValueError("the run has no steps: nothing to put on a page")
    cfg = ModelConfig.from_dict(meta["config"])
    prompt_len = int(records[0].positions[-1]) + 1
    n = len(records)
    L, H, Hkv = cfg.n_layers, cfg.n_heads, cfg.n_kv_heads
    lanes = _lane_infos(meta, records)
    k_all = np.concatenate([np.asarray(r.k, np.float32) for r in records], axis=2)  # (L, Hkv, N, D)
    v_all = np.concatenate([np.asarray(r.v, np.float32) for r in records], axis=2)
    scale = float(cfg.query_pre_attn_scalar or records[0].q.shape[-1])
    arrays = _Arrays()
    labels = _dict(meta.get("prompt_tokens"))
    prompt_ids = [int(i) for i in records[0].input_ids]
    tokens = [str(labels.get(str(i), labels.get(i, f"<{i}>"))) for i in prompt_ids] + [str(r.token) for r in records]

    owns = [_own_rows(lane["lossy"], j, records) for j, lane in enumerate(lanes)]
    queries = [_query_rows(records, j, owns[j]) for j in range(len(lanes))]
    lengths = np.array([prompt_len + s for s in range(n)], dtype=np.int64)  # row s: keys 0..P+s-1
    per_lane: list[dict[str, Any]] = []
    for j, lane in enumerate(lanes):
        steps = [r.lanes[j] for r in records]
        spans = [None if st.spans is None else [[int(a), int(b)] for a, b in st.spans] for st in steps]
        per_lane.append(
            {
                **lane,
                "own": owns[j],
                "computed": np.cumsum([st.kv_positions for st in steps]).tolist(),
                "context": [int(st.context) for st in steps],
                "ms": [round(float(st.wall_ms), 4) for st in steps],
                "cache_tokens": [int(st.cache_tokens) for st in steps],
                "cache_bytes": [int(st.cache_bytes) for st in steps],
                "overhead": [int(st.cache_overhead_bytes) for st in steps],
                "token": [int(st.token_id) for st in steps],
                "spans": spans,
                "attention": {},
                "kv": {},
            }
        )

    # the (layer, head) views, in the order they are kept: the app's first view (0, 0), then on, layer by layer
    order = [(layer, head) for layer in range(L) for head in range(H)]
    views: list[list[int]] = []
    kv_done: set[tuple[int, int]] = set()
    shared_kv: dict[str, Any] = {}
    dropped: list[str] = []
    fixed = len(json.dumps(tokens)) + 2000 * len(lanes) + 40_000  # the page's own text, metadata, per-step lists
    for layer, head in order:
        g = head // (H // Hkv)
        staged = _Arrays()
        staged._by_digest = dict(arrays._by_digest)
        att_names = []
        for j, lane in enumerate(lanes):
            flat = np.empty(int(lengths.sum()), dtype=np.float32)
            at = 0
            for s, table in _lane_tables(records, j, owns[j], k_all, layer, g):
                keys = _read_keys(records[s], j)
                flat[at : at + lengths[s]] = attention_row(
                    queries[j][s][layer, head], table, int(lengths[s]) - 1, keys, cfg.window_of(layer), lane, scale
                )
                at += int(lengths[s])
            att_names.append(staged.add(f"att{j}_{layer}_{head}", flat))
        kv_names: dict[int, dict[str, str]] = {}
        kv_key = f"{layer},{g}"
        if (layer, g) not in kv_done:
            staged.add(f"k_{layer}_{g}", k_all[layer, g])
            staged.add(f"v_{layer}_{g}", v_all[layer, g])
            for j in range(len(lanes)):
                if owns[j]:
                    kv_names[j] = _own_changes(staged, records, j, layer, g)
        if arrays.size + staged.size + fixed > budget_bytes and views:
            break
        arrays.items.update(staged.items)
        arrays._by_digest = staged._by_digest
        arrays.size += staged.size
        views.append([layer, head])
        for j, name in enumerate(att_names):
            per_lane[j]["attention"][f"{layer},{head}"] = name
        if (layer, g) not in kv_done:
            kv_done.add((layer, g))
            shared_kv[kv_key] = {
                "k": f"k_{layer}_{g}",
                "v": f"v_{layer}_{g}",
                "level": _kv_level(k_all, v_all, prompt_len, layer, g),
            }
            for j, names in kv_names.items():
                per_lane[j]["kv"][kv_key] = names
    if len(views) < len(order):
        kept_mb = (arrays.size + fixed) / 1e6
        dropped.append(
            f"attention and K/V of {len(order) - len(views)} of {len(order)} (layer, head) views: "
            f"the page keeps {len(views)} (from layer 0 head 0 on) to stay under {budget_bytes / 1e6:g} MB "
            f"(about {kept_mb:.1f} MB)"
        )
    versions = _dict(meta.get("versions"))
    return {
        "format": 1,
        "lang": lang if lang in LANGUAGES else "en",
        "version": str(versions.get("kvsim", "")),
        "model": str(meta.get("model_id", "")),
        "date": _date(str(meta.get("created", ""))),
        "prompt": str(meta.get("prompt") or ""),
        "settings": _settings(meta, n, lanes),
        "reference": str(meta.get("reference", lanes[0]["name"])),
        "prompt_len": prompt_len,
        "n_steps": n,
        "shape": {"layers": L, "heads": H, "kv_heads": Hkv, "width": int(k_all.shape[-1])},
        "phases": [r.phase for r in records],
        "tokens": tokens,
        "views": views,
        "kv": shared_kv,
        "lanes": per_lane,
        "arrays": arrays.items,
        "dropped": dropped,  # in English, for the command line; the page says it in its language from "budget"
        "budget": {"mb": budget_bytes / 1e6, "views": len(views), "recorded": len(order)},
    }


def _own_changes(staged: _Arrays, records: list[StepRecord], j: int, layer: int, g: int) -> dict[str, str]:
    """A lossy lane's recorded rows of (layer, g) as change lists: the step, position, K and V of every row it wrote."""
    steps, positions, ks, vs = [], [], [], []
    for s, r in enumerate(records):
        rows = r.lanes[j].rows
        if rows is None:
            continue
        steps.append(np.full(len(rows.positions), s, dtype=np.int32))
        positions.append(np.asarray(rows.positions, dtype=np.int32))
        ks.append(np.asarray(rows.k[layer, g], np.float32))
        vs.append(np.asarray(rows.v[layer, g], np.float32))
    width = records[0].k.shape[-1]
    cat = lambda a, shape: np.concatenate(a) if a else np.zeros(shape, np.float32)  # noqa: E731
    return {
        "step": staged.add(f"c{j}_{layer}_{g}_step", cat(steps, (0,)).astype(np.int32)),
        "pos": staged.add(f"c{j}_{layer}_{g}_pos", cat(positions, (0,)).astype(np.int32)),
        "k": staged.add(f"c{j}_{layer}_{g}_k", cat(ks, (0, width))),
        "v": staged.add(f"c{j}_{layer}_{g}_v", cat(vs, (0, width))),
    }


# ====================================================================== the page
def embed_json(data: object) -> str:
    """``data`` as JSON that is safe inside a ``<script>`` element: no ``<``, ``>`` or ``&`` (so no ``</script>``,
    ``<!--`` or ``]]>``), no U+2028/U+2029 — each written as its \\u escape, which JSON reads back unchanged."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text


def page_html(trace: Trace, *, lang: str = "en", budget_bytes: int = DEFAULT_BUDGET_BYTES) -> tuple[str, dict[str, Any]]:
    """The page for ``trace`` and the data it embeds (``["dropped"]``: what it left out, empty when all fit)."""
    data = page_data(trace, lang=lang, budget_bytes=budget_bytes)
    html_lang = "pt-BR" if data["lang"] == "pt_BR" else "en"
    page = PAGE.replace("{{LANG}}", html_lang).replace("{{DATA}}", embed_json(data), 1)
    return page, data


def read_page_data(path: str | Path) -> dict[str, Any]:
    """The run's data embedded in a written page (the read-back check; tests)."""
    text = Path(path).read_text(encoding="utf-8")
    m = _DATA_RE.search(text)
    if m is None:
        raise ValueError("no kvsim data in the page")
    data = json.loads(m.group(1))
    if not isinstance(data, dict) or data.get("format") != 1:
        raise ValueError("the page's data is not kvsim's")
    return data


def write_page(trace: Trace, path: str | Path, *, lang: str = "en", budget_bytes: int = DEFAULT_BUDGET_BYTES) -> PageReport:
    """Write ``trace`` as one self-contained HTML page to ``path``, atomically; the written file is read back
    (its data parsed and equal to what was embedded, every array decoded) before it replaces ``path``."""
    page, data = page_html(trace, lang=lang, budget_bytes=budget_bytes)
    encoded = page.encode("utf-8")

    def check(tmp: Path) -> None:
        back = read_page_data(tmp)
        if back != data:
            raise ValueError("the page's data differ from the run's")
        for _kind, b64 in back["arrays"].values():
            base64.b64decode(b64, validate=True)

    with atomic_target(path, check) as tmp:
        tmp.write_bytes(encoded)
    shape = data["shape"]
    return PageReport(
        path=check_target(path),
        size_bytes=len(encoded),
        budget_bytes=budget_bytes,
        views=len(data["views"]),
        views_recorded=shape["layers"] * shape["heads"],
        dropped=tuple(data["dropped"]),
    )
