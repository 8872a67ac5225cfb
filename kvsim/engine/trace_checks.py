"""What a trace must mean, not only how it must be shaped: checked on load, before anything is drawn.

A file can have every array of the right shape and still describe nothing (8 query heads over 3
K/V heads, a step that read keys beyond the sequence, a time that is not a number). ``Trace.load``
runs these checks on every trace; a failure is a ``TraceError`` with one line that says what is wrong.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.text import printable
from ..core.words import unsafe_field
from ..models.config import ConfigError, ModelConfig

if TYPE_CHECKING:
    from .records import LaneStep, StepRecord

MAX_LANES = 16  # more lanes than a screen can compare: refused, not drawn
MAX_WORDS_CHARS = 1000  # a lane's title or explanation template, or one value that fills it


class TraceError(ValueError):
    """A trace file that cannot be read: wrong format, truncated, tampered with, or meaningless."""


CONFIG_KEYS = ("n_layers", "n_heads", "n_kv_heads", "head_dim", "max_seq_len")
CONFIG_LIMIT = 1 << 20  # no model kvsim draws has more layers, heads, dims or positions than this


def is_int(value: object) -> bool:
    return type(value) is int


def _is_number(value: object) -> bool:
    return (type(value) is int or type(value) is float) and math.isfinite(value)


def check_meta(meta: object) -> None:
    """The metadata must describe a model and lanes that make sense, not only have the right keys."""
    if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict):
        raise TraceError("metadata lacks the model config")
    cfg = meta["config"]
    bad = [k for k in CONFIG_KEYS if not (is_int(cfg.get(k)) and 1 <= cfg[k] <= CONFIG_LIMIT)]
    if bad:
        raise TraceError(f"model config: {', '.join(bad)} must be whole numbers from 1 to {CONFIG_LIMIT}")
    if cfg["n_heads"] % cfg["n_kv_heads"]:
        raise TraceError(
            f"model config: {cfg['n_heads']} query heads cannot share {cfg['n_kv_heads']} K/V heads "
            "(heads must be a multiple of kv heads)"
        )
    window = cfg.get("sliding_window")
    if window is not None and not (is_int(window) and window >= 1):
        raise TraceError(f"model config: sliding_window must be a whole number ≥ 1, got {window!r}")
    vocab = cfg.get("vocab_size")
    if vocab is not None and not (is_int(vocab) and vocab >= 1):
        raise TraceError(f"model config: vocab_size must be a whole number ≥ 1, got {vocab!r}")
    try:  # every other field too: a NaN rope_theta or a window of 2.5 is no model
        ModelConfig.from_dict(cfg)
    except (ConfigError, TypeError, ValueError) as exc:
        raise TraceError(f"model config: {exc}") from None
    lanes = meta.get("lanes")
    if (
        not isinstance(lanes, list)
        or not lanes
        or not all(isinstance(x, dict) and isinstance(x.get("name"), str) and x["name"] for x in lanes)
    ):
        raise TraceError("metadata lacks the lanes (each a name)")
    if len(lanes) > MAX_LANES:
        raise TraceError(f"{len(lanes)} lanes: kvsim shows at most {MAX_LANES} side by side")
    names = [x["name"] for x in lanes]
    if len(set(names)) != len(names):
        raise TraceError("two lanes share a name")
    for x in lanes:
        for key in ("title", "explanation", "policy"):
            if key in x and not isinstance(x[key], str):
                raise TraceError(f"lane {x['name']!r}: {key} is not text")
        _check_words(x)
        if not (is_int(x.get("sinks", 0)) and x.get("sinks", 0) >= 0):
            raise TraceError(f"lane {x['name']!r}: sinks must be a whole number ≥ 0")
        w = x.get("window")
        if w is not None and not (is_int(w) and w >= 1):
            raise TraceError(f"lane {x['name']!r}: window must be a whole number ≥ 1, got {w!r}")
        _check_model_side(x)
        _check_options(x)
    vocab = cfg.get("vocab_size") or 2**31
    ids = meta.get("prompt_ids", [])
    if not isinstance(ids, list) or not all(is_int(i) and 0 <= i < vocab for i in ids):
        raise TraceError(f"prompt_ids must be a list of token ids from 0 to {vocab - 1}")
    labels = meta.get("prompt_tokens", {})  # the app shows these texts for the prompt's ids
    if not isinstance(labels, dict) or not all(
        isinstance(k, str) and k.isascii() and k.isdigit() and int(k) < vocab and isinstance(v, str) for k, v in labels.items()
    ):
        raise TraceError("prompt_tokens must map token ids (as text) to their texts")
    for key in ("model_id", "prompt"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            raise TraceError(f"{key} is not text")


MAX_MODEL_BYTES = 1 << 50  # a lane's weights: no model kvsim runs is a petabyte


def _check_model_side(lane: dict[str, Any]) -> None:
    """A lane's model side (``engine.model_side.lane_meta``): its weights' bytes whole numbers, the quantized
    part within the whole; a speculative lane's draft named, its K a small whole number."""
    where = f"lane {printable(lane['name'], 60)!r}"
    for key in ("weight_bytes", "quantized_weight_bytes"):
        if key in lane and not (is_int(lane[key]) and 0 <= lane[key] <= MAX_MODEL_BYTES):
            raise TraceError(f"{where}: {key} must be a whole number of bytes, got {printable(repr(lane[key]), 60)}")
    if "quantized_weight_bytes" in lane and lane["quantized_weight_bytes"] > lane.get("weight_bytes", 0):
        raise TraceError(f"{where}: quantized_weight_bytes is more than weight_bytes")
    for key in ("weights", "draft", "spec"):
        if key in lane and not (isinstance(lane[key], str) and len(lane[key]) <= MAX_WORDS_CHARS):
            raise TraceError(f"{where}: {key} is not short text")
    if "draft_k" in lane and not (is_int(lane["draft_k"]) and 1 <= lane["draft_k"] <= 64):
        raise TraceError(f"{where}: draft_k must be a whole number from 1 to 64, got {printable(repr(lane['draft_k']), 60)}")


MAX_OPTION = 999_999_999  # the largest whole number a lane spec's grammar takes (window:W)
#: the options that count rows, heads, tokens or a group and are at least 1 in every policy's grammar (snapkv:B and its
#: wW, h2o:B, tova:B, window:W, latent:R, spec:K and its early:N, paged:B:N, int4:gG); a percentage at most 100
_AT_LEAST_ONE = frozenset({"budget", "window", "rank", "k", "layers", "block_size", "pool_blocks", "group"})


_TEXT_OPTIONS = {  # the options that are text: a speculative lane's draft source and its draft model's name
    "draft": lambda v: v in ("lookup", "early", "head", "model"),
    "model": lambda v: 0 < len(v) <= 4096,
}


def _check_options(lane: dict[str, Any]) -> None:
    """A lane's options (what its spec's grammar parsed, ``options`` in the metadata) and the numbers its words show:
    plain values — whole numbers from 0 to ``MAX_OPTION``, those that count rows or heads at least 1, a percentage at
    most 100, an observation window within its budget (snapkv:B:wW) —, flags, or a draft's source and model name;
    nothing the grammar would have refused (snapkv:0, snapkv:8:w9), so no bill or explanation shows impossible figures."""
    where = f"lane {printable(lane['name'], 60)!r}"
    options = lane.get("options", {})
    if not isinstance(options, dict) or len(options) > 16:
        raise TraceError(f"{where}: options are not an object of at most 16 entries")
    values = lane.get("words", {}).get("values", {}) if isinstance(lane.get("words"), dict) else {}
    for source, table in (("options", options), ("words", values if isinstance(values, dict) else {})):
        for key, value in table.items():
            if not isinstance(key, str) or not key.isidentifier() or len(key) > 40:
                raise TraceError(f"{where}: {source} name {printable(repr(key), 60)} is not a plain name")
            if source == "words" and key not in _AT_LEAST_ONE and key not in ("percent", "sinks", "recent", "residual"):
                continue  # other words (a draft's name, a computed distance) are checked as words
            if isinstance(value, str) and source == "options" and key in _TEXT_OPTIONS:
                if not _TEXT_OPTIONS[key](value):
                    raise TraceError(f"{where}: option {key} is not {key} text kvsim writes: {printable(repr(value), 60)}")
                continue
            if value is None or isinstance(value, bool):
                continue
            if not is_int(value) or not 0 <= value <= MAX_OPTION:
                raise TraceError(
                    f"{where}: {source} {key} must be a whole number from 0 to {MAX_OPTION:,}, got {printable(repr(value), 60)}"
                )
            if key in _AT_LEAST_ONE and value < 1:
                raise TraceError(f"{where}: {source} {key} must be at least 1, got {value}")
            if key == "percent" and value > 100:
                raise TraceError(f"{where}: {source} percent must be at most 100, got {value}")
    heavy, recent = options.get("heavy"), options.get("recent")
    kept = heavy + (recent if isinstance(recent, int) else heavy) if isinstance(heavy, int) else 1
    if kept < 1:  # h2o:0 keeps recent rows only; h2o:0:r0 keeps nothing
        raise TraceError(f"{where}: it keeps no row (heavy hitters {heavy}, recent rows {recent})")
    if is_int(options.get("window")) and is_int(options.get("budget")) and options["window"] > options["budget"]:
        raise TraceError(f"{where}: its window W = {options['window']} is larger than its budget B = {options['budget']}")


def _check_words(lane: dict[str, Any]) -> None:
    """A lane's words (title and explanation templates, the values that fill them) are filled by the app when it
    shows the run: each template must be text whose fields are plain names with a harmless format, its values
    names mapped to numbers or short text."""
    words = lane.get("words")
    if words is None:
        return
    where = f"lane {lane['name']!r}: words"
    if not isinstance(words, dict):
        raise TraceError(f"{where} are not an object")
    for key in ("title", "explanation", "short"):
        template = words.get(key, "" if key == "short" else None)  # "short": runs saved before it have none
        if not isinstance(template, str) or len(template) > MAX_WORDS_CHARS:
            raise TraceError(f"{where}: {key} is not text of at most {MAX_WORDS_CHARS} characters")
        if (bad := unsafe_field(template)) is not None:
            raise TraceError(f"{where}: {key} holds a field kvsim does not fill ({printable(bad, 60)})")
    values = words.get("values", {})
    if not isinstance(values, dict) or not all(
        isinstance(k, str) and k.isidentifier() and _short_scalar(v) for k, v in values.items()
    ):
        raise TraceError(f"{where}: values must map names to numbers or short text")


def _short_scalar(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int | float):
        return math.isfinite(value)
    return isinstance(value, str) and len(value) <= MAX_WORDS_CHARS


def check_sequence(records: list[StepRecord], meta: dict[str, Any]) -> None:
    """Steps 0..N-1 of one run, each carrying every lane the metadata names, positions contiguous."""
    names = [lane["name"] for lane in meta["lanes"]]
    # a lane's budget is read from its policy only when it holds rows (an evicting lane): the policies' modules
    # import torch, which a run of full caches (and `kvsim inspect` of one) never needs
    by_name = {lane["name"]: lane for lane in meta["lanes"]}
    budgets: dict[str, int | None] = {}
    next_position = 0
    max_len = meta["config"]["max_seq_len"]
    for i, r in enumerate(records):
        if r.step != i or r.run_id != records[0].run_id:
            raise TraceError(f"step {i}: steps are not one run numbered 0..N-1")
        if r.phase != ("prefill" if i == 0 else "decode"):
            raise TraceError(f"step {i}: phase {r.phase!r} (step 0 is the prefill, later steps decode)")
        if [lane.name for lane in r.lanes] != names:
            raise TraceError(f"step {i}: lanes {[lane.name for lane in r.lanes]} differ from {names}")
        if int(r.positions[0]) != next_position or (
            len(r.positions) > 1 and not np.array_equal(r.positions, np.arange(next_position, next_position + len(r.positions)))
        ):
            raise TraceError(f"step {i}: positions do not continue the previous step's")
        next_position = int(r.positions[-1]) + 1
        if next_position > max_len:
            raise TraceError(f"step {i}: position {next_position - 1} is beyond the model's context of {max_len}")
        for lane in r.lanes:
            _check_lane(i, lane, r, next_position, meta["config"])
            if lane.held is not None and lane.name not in budgets:
                budgets[lane.name] = _row_budget(by_name[lane.name], meta["config"])
            budget = budgets.get(lane.name)
            if lane.held is not None and budget is not None and lane.held.positions.shape[2] > budget:
                raise TraceError(
                    f"step {i}, lane {printable(lane.name, 60)!r}: holds {lane.held.positions.shape[2]} rows per head, "
                    f"more than its budget of {budget}"
                )


def _row_budget(lane: dict[str, Any], cfg: dict[str, Any]) -> int | None:
    """The rows per head a lane's policy keeps at most between steps (its bill's window: ``h2o:B:rR`` B + R,
    ``tova:B`` B), from the policy and options its metadata names; None when it has no fixed budget."""
    from ..caches.registry import policy_class
    from ..core.formulas import KVShape

    cls = policy_class(str(lane.get("policy", "")))
    options = lane.get("options")
    if cls is None or not isinstance(options, dict):
        return None
    try:  # options read from the file: a policy that cannot bill them has nothing to say here
        bill = cls.bill(options, KVShape(cfg["n_layers"], cfg["n_kv_heads"], cfg["head_dim"]), cfg["max_seq_len"], 1, 16)
    except Exception:  # noqa: BLE001
        return None
    return bill.window if bill is not None and is_int(bill.window) else None


def _check_lane(i: int, lane: LaneStep, r: StepRecord, n: int, cfg: dict[str, Any]) -> None:
    where = f"step {i}, lane {lane.name!r}"
    for key in (
        "kv_positions",
        "context",
        "flops",
        "cache_tokens",
        "cache_bytes",
        "token_id",
        "first_key",
        "cache_overhead_bytes",
        "drafted",
        "accepted",
        "rolled_back",
        "forwards",
    ):
        value = getattr(lane, key)
        if not is_int(value) or value < 0:
            raise TraceError(f"{where}: {key} must be a whole number ≥ 0, got {value!r}")
    if not (_is_number(lane.ref_logprob) and lane.ref_logprob <= 0):
        raise TraceError(f"{where}: ref_logprob must be a finite number ≤ 0, got {lane.ref_logprob!r}")
    if (
        lane.accepted + lane.rolled_back > lane.drafted
        or lane.forwards > 1
        or (lane.drafted and not lane.forwards)
        or lane.drafted > n + 64  # (a draft is at most 64 tokens ahead of a sequence that long)
    ):
        raise TraceError(
            f"{where}: accepted {lane.accepted} and rolled back {lane.rolled_back} of {lane.drafted} drafted "
            f"in {lane.forwards} forwards"
        )
    for key in ("wall_ms", "logit_diff", "kl_div", "draft_ms"):
        value = getattr(lane, key)
        if not _is_number(value) or value < 0:
            raise TraceError(f"{where}: {key} must be a finite number ≥ 0, got {value!r}")
    for key in ("wall_ms_min", "wall_ms_max"):
        value = getattr(lane, key)
        if value is not None and not (_is_number(value) and value >= 0):
            raise TraceError(f"{where}: {key} must be a finite number ≥ 0")
    if lane.recompute_diff is not None and not (_is_number(lane.recompute_diff) and lane.recompute_diff >= 0):
        raise TraceError(f"{where}: recompute_diff must be a finite number ≥ 0")
    if lane.kv_positions > n or lane.context > n or lane.cache_overhead_bytes > lane.cache_bytes:
        raise TraceError(f"{where}: counts larger than the sequence ({n} positions)")
    if not all(is_int(t) for t in lane.top_ids) or not all(_is_number(p) for p in lane.top_probs):
        raise TraceError(f"{where}: top candidates are not numbers")
    if lane.spans is not None:
        last = 0
        for a, b in lane.spans:
            if not (is_int(a) and is_int(b) and last <= a < b <= n):
                raise TraceError(f"{where}: key spans are not increasing runs within 0..{n}")
            last = b
    rows = lane.rows
    if rows is not None:
        L, Hkv, _, D = r.k.shape
        R = rows.positions.shape[0] if rows.positions.ndim == 1 else -1
        if (
            R < 0
            or rows.k.shape != (L, Hkv, R, D)
            or rows.v.shape != rows.k.shape
            or rows.q.shape != r.q.shape
            or (R and not (np.all(np.diff(rows.positions) > 0) and 0 <= rows.positions[0] and rows.positions[-1] < n))
        ):
            raise TraceError(f"{where}: its own rows do not fit the step's shapes and positions")
        if not all(np.isfinite(a).all() for a in (rows.k, rows.v, rows.q)):
            raise TraceError(f"{where}: its own rows hold values that are not numbers")
    held = lane.held
    if held is not None:  # rows per layer and KV head of a lane that evicts by attention
        L, Hkv = r.k.shape[:2]
        S = held.positions.shape[2]
        group = cfg["n_heads"] // cfg["n_kv_heads"]
        if held.positions.shape[:2] != (L, Hkv) or S != lane.cache_tokens or S > n:
            raise TraceError(f"{where}: its {S} rows per head do not fit the step ({lane.cache_tokens} held of {n})")
        pos, evicted = held.positions.astype(np.int64), held.evicted.astype(np.int64)
        if (S and (pos.min() < 0 or pos.max() >= n or (S > 1 and not (np.diff(pos, axis=2) > 0).all()))) or (
            evicted.size and (evicted.min() < 0 or evicted.max() >= n)
        ):
            raise TraceError(f"{where}: its rows per head are not increasing positions within 0..{n - 1}")
        scores = held.scores.astype(np.float64)
        # a score is attention received (summed over at most n queries and the group's heads, pooled at most
        # over a few neighbours): never negative, never more than a few times n × group
        if scores.size and not (np.isfinite(scores).all() and scores.min() >= 0 and scores.max() <= 8 * n * group):
            raise TraceError(f"{where}: its rows' scores are not sums of attention weights (from 0 to {8 * n * group})")
    chosen = lane.selected
    if chosen is not None:  # sparse attention: per layer, each new query's k positions read, increasing, -1 after
        pos = chosen.positions.astype(np.int64)
        L, T = r.k.shape[0], len(r.positions)
        valid = pos >= 0
        # increasing, the -1 padding only after the positions
        disorder = ((np.diff(pos, axis=2) <= 0) & valid[..., 1:]) | (valid[..., 1:] & ~valid[..., :-1])
        if pos.shape[:2] != (L, T) or pos.min(initial=0) < -1 or pos.max(initial=0) >= n or disorder.any():
            raise TraceError(f"{where}: its rows read per query are not increasing positions within 0..{n - 1}")
        if (np.where(valid, pos, -1) > r.positions[None, :, None]).any():
            raise TraceError(f"{where}: a query read a row after its own position")
    drafts = lane.drafts
    if drafts is not None:  # a speculative check's drafted rows: at n, n+1, ..., as many as it drafted
        vocab = cfg.get("vocab_size") or 2**31
        if drafts.token_ids.size and (int(drafts.token_ids.min()) < 0 or int(drafts.token_ids.max()) >= vocab):
            raise TraceError(f"{where}: a drafted token id is outside the model's vocabulary of {vocab}")
        L, Hkv, _, D = r.k.shape
        d = lane.drafted
        if (
            drafts.positions.shape != (d,)
            or drafts.token_ids.shape != (d,)
            or not np.array_equal(drafts.positions, np.arange(n, n + d))
            or drafts.k.shape != (L, Hkv, d, D)
            or drafts.v.shape != drafts.k.shape
            or drafts.q.shape != (L, r.q.shape[1], d, D)
        ):
            raise TraceError(f"{where}: its drafted rows do not fit the step ({d} drafted after {n} positions)")
        if not all(np.isfinite(a).all() for a in (drafts.k, drafts.v, drafts.q)):
            raise TraceError(f"{where}: its drafted rows hold values that are not numbers")
