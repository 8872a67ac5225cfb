"""A corpus of damaged and hostile inputs, built at test time (no binaries are committed).

``build_corpus(root)`` writes model files under ``root`` — Hugging Face checkpoint directories
with bad config values, damaged safetensors, extra/missing/reshaped/NaN tensors, hostile
tokenizer.json files and chat templates; GGUF files with bad metadata, absurd counts, damaged
tokenizers, missing or extra tensors, truncated bytes; FIFOs, empty files, directories — and
returns ``Case``s: a command line for ``kvsim.cli.entry.main`` each. Every one of them must end with
exit status 2 and one ``error: …`` line on stderr, quickly and in bounded memory.

``build_trace_corpus(root, good)`` damages a saved run (``.kvsim``) in the ways a file on disk gets
damaged or forged; ``Trace.load`` must raise ``TraceError`` (or, for a harmless flip, load).

``run_cases(cases_file, results_file)`` is the child-process side: it sets a memory limit, then
runs every case in this one process (torch is imported once), each under an alarm, capturing the
process's file descriptor 2 (Rust panics and warnings write there, not to ``sys.stderr``).
"""

from __future__ import annotations

import copy
import json
import math
import os
import shutil
import struct
import sys
import time
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

MEMORY_LIMIT = 2 * 1024**3
CASE_SECONDS = 30
HANG_FACTOR = 10  # a case still running after CASE_SECONDS × this is a hang (reported as "timeout")
VOCAB, DIM, FFN, LAYERS, HEADS, KV_HEADS = 96, 32, 64, 2, 4, 2


@dataclass
class Case:
    name: str
    argv: list[str]
    kind: str = "cli"  # "cli": kvsim.cli.entry.main(argv); "trace": Trace.load(argv[0]); "requests": load_runs(argv[0])
    seconds: int = 30  # the alarm; shorter for a case known to block


def _run(model: str, *extra: str) -> list[str]:
    return ["run", "--model", model, "--prompt", "w1 w2 w3", "--steps", "2", "--json", *extra]


# ------------------------------------------------------------------------ checkpoint directories
def base_config() -> dict[str, Any]:
    return {
        "model_type": "llama",
        "vocab_size": VOCAB,
        "hidden_size": DIM,
        "intermediate_size": FFN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "max_position_embeddings": 64,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": False,
        "hidden_act": "silu",
        "bos_token_id": 1,
        "eos_token_id": 2,
    }


def base_weights(seed: int = 0) -> dict[str, np.ndarray]:
    from kvsim.models.config import ModelConfig
    from kvsim.models.hf_config import hf_tensor_shapes

    cfg = ModelConfig(
        family="llama",
        vocab_size=VOCAB,
        n_layers=LAYERS,
        n_heads=HEADS,
        n_kv_heads=KV_HEADS,
        dim=DIM,
        hidden_dim=FFN,
        max_seq_len=64,
    )
    rng = np.random.default_rng(seed)
    return {
        k: (rng.standard_normal(s) / math.sqrt(s[-1])).astype(np.float32) if len(s) == 2 else np.ones(s, np.float32)
        for k, s in hf_tensor_shapes(cfg).items()
    }


def base_tokenizer() -> dict[str, Any]:
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<unk>": 0, **{f"w{i}": i for i in range(1, VOCAB)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return json.loads(tok.to_str())


def write_checkpoint(
    path: Path,
    config: Any = None,
    weights: dict[str, np.ndarray] | None = None,
    tokenizer: Any = None,
    template: str | None = None,
    raw_config: bytes | None = None,
) -> Path:
    from safetensors.numpy import save_file

    path.mkdir(parents=True)
    if raw_config is not None:
        (path / "config.json").write_bytes(raw_config)
    else:
        (path / "config.json").write_text(json.dumps(base_config() if config is None else config))
    save_file(base_weights() if weights is None else weights, str(path / "model.safetensors"))
    (path / "tokenizer.json").write_text(json.dumps(base_tokenizer() if tokenizer is None else tokenizer))
    if template is not None:
        (path / "chat_template.jinja").write_text(template)
    return path


BAD_NUMBERS: list[Any] = [2.5, "2", True, -1, 0, 10**9, 1e308, float("nan"), float("inf"), [2], {"n": 2}]
SIZE_KEYS = [
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "hidden_size",
    "intermediate_size",
    "vocab_size",
    "max_position_embeddings",
]
OTHER_CONFIG_CHANGES: list[tuple[str, dict[str, Any]]] = [
    ("layers-5000", {"num_hidden_layers": 5000}),
    ("heads-3", {"num_attention_heads": 3}),
    ("kv-heads-3", {"num_key_value_heads": 3}),
    ("head-dim-odd", {"head_dim": 7}),
    ("head-dim-huge", {"head_dim": 1000}),
    ("head-dim-string", {"head_dim": "8"}),
    ("eps-negative", {"rms_norm_eps": -1e-6}),
    ("eps-nan", {"rms_norm_eps": float("nan")}),
    ("eps-inf", {"rms_norm_eps": float("inf")}),
    ("eps-string", {"rms_norm_eps": "1e-6"}),
    ("theta-zero", {"rope_theta": 0}),
    ("theta-negative", {"rope_theta": -10000.0}),
    ("theta-nan", {"rope_theta": float("nan")}),
    ("theta-inf", {"rope_theta": float("inf")}),
    ("theta-string", {"rope_theta": "10000"}),
    ("theta-bool", {"rope_theta": True}),
    ("tie-string", {"tie_word_embeddings": "no"}),
    ("tie-int", {"tie_word_embeddings": 0}),
    ("attention-bias-string", {"attention_bias": "false"}),
    ("attention-bias-true", {"attention_bias": True}),  # biases the weights do not have
    ("mlp-bias-true", {"mlp_bias": True}),
    ("model-type-bert", {"model_type": "bert"}),
    ("model-type-int", {"model_type": 5}),
    ("model-type-list", {"model_type": ["llama"]}),
    ("model-type-missing", {"model_type": None}),
    ("act-gelu", {"hidden_act": "gelu"}),
    ("rope-yarn", {"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}),
    ("rope-params-string", {"rope_parameters": "default"}),
    ("rope-params-theta-nan", {"rope_parameters": {"rope_type": "default", "rope_theta": float("nan")}}),
    ("pretraining-tp-2", {"pretraining_tp": 2}),
    ("layer-types-mixed", {"layer_types": ["full_attention", "sliding_attention"], "sliding_window": 8}),
    ("layer-types-string", {"layer_types": "full_attention"}),
    # an eos id outside the vocabulary (10**6, -1) is no longer a bad input: the checkpoint loads with a warning that
    # generation will not stop at it, as transformers loads it (tests/engine/runs/test_inputs.py holds that)
    ("eos-string", {"eos_token_id": "</s>"}),
    ("bos-float", {"bos_token_id": 1.5}),
    ("vocab-smaller-than-tokenizer", {"vocab_size": 50}),
    ("mistral-window-zero", {"model_type": "mistral", "sliding_window": 0}),
    ("mistral-window-negative", {"model_type": "mistral", "sliding_window": -4}),
    ("mistral-window-float", {"model_type": "mistral", "sliding_window": 2.5}),
    ("mistral-window-string", {"model_type": "mistral", "sliding_window": "8"}),
    ("mistral-window-bool", {"model_type": "mistral", "sliding_window": True}),
    ("qwen2-window-flag-string", {"model_type": "qwen2", "use_sliding_window": "yes"}),
    ("gpt2-act-relu", {"model_type": "gpt2", "activation_function": "relu"}),
    ("gpt2-missing-n-embd", {"model_type": "gpt2", "n_layer": 2, "n_head": 4}),
]

# tokenizer.json damage: (name, change to the JSON, or raw bytes)
TOKENIZER_CASES: list[tuple[str, Any]] = [
    (
        "normalizer-expands",
        {
            "normalizer": {
                "type": "Sequence",
                "normalizers": [{"type": "Replace", "pattern": {"String": "w"}, "content": "w" * 100}] * 4,
            }
        },
    ),
    ("normalizer-regex-empty", {"normalizer": {"type": "Replace", "pattern": {"Regex": ""}, "content": "x" * 5000}}),
    ("normalizer-unknown", {"normalizer": {"type": "Frobnicate"}}),
    ("normalizer-not-object", {"normalizer": [1, 2, 3]}),
    (
        "regex-catastrophic",
        {"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(a+)+$"}, "behavior": "Isolated", "invert": False}},
    ),
    (
        "regex-invalid",
        {"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(((("}, "behavior": "Isolated", "invert": False}},
    ),
    ("ids-beyond-vocab", {"model": {"type": "WordLevel", "vocab": {"<unk>": 0, "w1": 10**6}, "unk_token": "<unk>"}}),
    ("model-missing", {"model": None}),
    ("model-unknown", {"model": {"type": "Frobnicate"}}),
    (
        "added-token-beyond-vocab",
        {
            "added_tokens": [
                {
                    "id": 5000,
                    "content": "<x>",
                    "single_word": False,
                    "lstrip": False,
                    "rstrip": False,
                    "normalized": False,
                    "special": True,
                }
            ]
        },
    ),
]
TOKENIZER_RAW: list[tuple[str, bytes]] = [
    ("tokenizer-empty", b""),
    ("tokenizer-garbage", b"\x00\xff\xfe not json"),
    ("tokenizer-list", b"[1, 2, 3]"),
    ("tokenizer-deep", b"[" * 100_000 + b"]" * 100_000),
    ("tokenizer-bad-utf8", b'{"model": "\xff\xfe"}'),
]

CHAT_TEMPLATES: list[tuple[str, str]] = [
    ("range-100k-x-1kB", "{% for i in range(100000) %}" + "x" * 1000 + "{% endfor %}"),
    ("nested-ranges", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
    ("nested-strings", "{% set s = 'a' * 3000 %}{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}"),
    ("recursion", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"),
    ("recursive-loop", "{% for i in range(10) recursive %}{{ loop(range(10)) }}{% endfor %}"),
    ("include", "{% include 'other.jinja' %}"),
    ("import", "{% import 'macros.jinja' as m %}{{ m.x() }}"),
    ("from-import", "{% from 'macros.jinja' import x %}{{ x() }}"),
    ("extends", "{% extends 'base.jinja' %}"),
    ("string-times-huge", "{{ 'a' * 1000000000 }}"),
    ("list-times-huge", "{{ ([0] * 100000000) | length }}"),
    ("power-tower", "{{ 9 ** (9 ** 9) }}"),
    ("format-width", "{{ '%999999999d' | format(1) }}"),
    ("percent-width", "{{ '%999999999d' % 1 }}"),
    ("percent-star", "{{ '%*d' % (999999999, 1) }}"),
    ("str-format-width", "{{ '{:>999999999}'.format(1) }}"),
    ("center-huge", "{{ 'x'.center(1000000000) }}"),
    ("filter-center-huge", "{{ 'x' | center(1000000000) }}"),
    ("indent-huge", "{{ messages[0]['content'] | indent(1000000000, true) }}"),
    ("tojson-indent-huge", "{{ messages | tojson(indent=1000000000) }}"),
    (
        "concat-doubling-loop",
        "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
    ),
    ("concat-doubling-lines", "{% set a = 'abcdefgh' %}" + "{% set a = a ~ a %}" * 40 + "{{ a | length }}"),
    ("plus-doubling", "{% set a = 'abcdefgh' %}" + "{% set a = a + a %}" * 40 + "{{ a | length }}"),
    ("block-set-doubling", "{% set a = 'abcdefgh' %}" + "{% set a %}{{ a }}{{ a }}{% endset %}" * 40 + "{{ a|length }}"),
    ("replace-doubling", "{% set a = 'aaaa' %}" + "{% set a = a.replace('a', 'aa') %}" * 40 + "{{ a | length }}"),
    ("lipsum", "{{ lipsum(n=1000000) }}"),
    ("range-huge", "{% for i in range(10000000000) %}x{% endfor %}"),
    ("raise-exception", "{{ raise_exception('this template refuses') }}"),
    ("syntax-error", "{% for %}"),
    ("unclosed", "{% if true %}"),
    ("undefined-call", "{{ nothing_here() }}"),
    ("sandbox-escape", "{{ ''.__class__.__mro__[1].__subclasses__() }}"),
    ("mutate", "{% set x = [] %}{{ x.append(1) }}"),
    ("deep-parens", "{{ " + "(" * 20000 + "1" + ")" * 20000 + " }}"),
    ("huge-template", "x" * 2_000_000),
    ("int-to-str-huge", "{{ (10 ** 5000) ~ '' }}"),
    ("content-times", "{{ messages[0]['content'] * 100000000 }}"),
    ("wordwrap-join", "{{ (range(100000) | list | join(',')) * 100 }}"),
]


def checkpoint_cases(root: Path) -> list[Case]:
    cases: list[Case] = []
    good = write_checkpoint(root / "good")
    n = 0

    def add(name: str, path: Path, *extra: str) -> None:
        cases.append(Case(f"hf/{name}", _run(str(path), *extra)))

    def cfg_case(name: str, change: dict[str, Any]) -> None:
        nonlocal n
        n += 1
        cfg = base_config()
        for k, v in change.items():
            if v is None:
                cfg.pop(k, None)
            else:
                cfg[k] = v
        if cfg.get("model_type") == "gpt2":
            cfg = {k: v for k, v in cfg.items() if k != "num_hidden_layers"}
        add(f"config/{name}", write_checkpoint(root / f"cfg{n}", config=cfg))

    for key in SIZE_KEYS:
        for value in BAD_NUMBERS:
            cfg_case(f"{key}={value!r}", {key: value})
        if key != "max_position_embeddings":  # absent, it has a default
            cfg_case(f"{key}-missing", {key: None})
    for name, change in OTHER_CONFIG_CHANGES:
        cfg_case(name, change)
    for name, raw in [
        ("config-empty", b""),
        ("config-garbage", b"\x00\xffgarbage"),
        ("config-list", b"[]"),
        ("config-string", b'"llama"'),
        ("config-deep", b"[" * 100_000 + b"]" * 100_000),
        ("config-bad-utf8", b'{"model_type": "\xff"}'),
        ("config-nan-literal", b'{"vocab_size": NaN}'),
        ("config-huge-int", b'{"model_type": "llama", "vocab_size": 1' + b"0" * 5000 + b"}"),
    ]:
        add(name, write_checkpoint(root / name, raw_config=raw))

    # weights
    w = base_weights()
    changes: list[tuple[str, dict[str, np.ndarray]]] = []
    extra = dict(w)
    extra["model.layers.0.self_attn.o_proj.bias"] = np.zeros(DIM, np.float32)
    changes.append(("extra-o-proj-bias", extra))
    extra = dict(w)
    extra["model.layers.0.mlp.up_proj.bias"] = np.zeros(FFN, np.float32)
    changes.append(("extra-mlp-bias", extra))
    extra = dict(w)
    extra["model.layers.5.self_attn.q_proj.weight"] = np.zeros((DIM, DIM), np.float32)
    changes.append(("extra-layer", extra))
    extra = dict(w)
    extra["vision_tower.weight"] = np.zeros(4, np.float32)
    changes.append(("extra-unknown", extra))
    for missing in ("lm_head.weight", "model.norm.weight", "model.layers.1.mlp.down_proj.weight"):
        changes.append((f"missing-{missing}", {k: v for k, v in w.items() if k != missing}))
    reshaped = dict(w)
    reshaped["model.layers.0.self_attn.k_proj.weight"] = np.zeros((DIM, DIM), np.float32)
    changes.append(("wrong-shape", reshaped))
    transposed = dict(w)
    transposed["model.layers.0.mlp.down_proj.weight"] = w["model.layers.0.mlp.down_proj.weight"].T.copy()
    changes.append(("transposed", transposed))
    for label, value in (("nan", np.nan), ("inf", np.inf)):
        bad = {k: v.copy() for k, v in w.items()}
        bad["model.layers.0.self_attn.q_proj.weight"][0, 0] = value
        changes.append((f"{label}-weight", bad))
    ints = dict(w)
    ints["model.embed_tokens.weight"] = w["model.embed_tokens.weight"].astype(np.int32)
    changes.append(("int-weights", ints))
    huge = dict(w)  # the final norm and the head each near float32's largest: their product is infinite
    huge["model.norm.weight"] = np.full(DIM, 3e38, np.float32)
    huge["lm_head.weight"] = np.full((VOCAB, DIM), 3e38, np.float32)
    changes.append(("finite-but-overflowing", huge))  # loads; the logits are not numbers
    for name, weights in changes:
        add(f"weights/{name}", write_checkpoint(root / f"w-{name}", weights=weights))

    data = (good / "model.safetensors").read_bytes()
    for name, raw in [
        ("empty", b""),
        ("garbage", b"not a safetensors file" * 10),
        ("half", data[: len(data) // 2]),
        ("header-only", data[:200]),
        ("len-huge", struct.pack("<Q", 2**62) + data[8:]),
        ("len-past-end", struct.pack("<Q", len(data)) + data[8:]),
        ("header-not-json", struct.pack("<Q", 16) + b"{{{{{{{{{{{{{{{{" + data[24:]),
        ("offsets-past-end", _patch_offsets(data)),
    ]:
        path = root / f"st-{name}"
        shutil.copytree(good, path)
        (path / "model.safetensors").write_bytes(raw)
        add(f"safetensors/{name}", path)
    two = root / "duplicate-shards"
    shutil.copytree(good, two)
    shutil.copy(two / "model.safetensors", two / "model-2.safetensors")
    add("duplicate-shards", two)
    pickle_only = root / "pickle-only"
    shutil.copytree(good, pickle_only)
    (pickle_only / "model.safetensors").unlink()
    (pickle_only / "pytorch_model.bin").write_bytes(b"\x80\x04 not loaded")
    add("pickle-only", pickle_only)
    tied = root / "tied-differs"
    cfg = base_config()
    cfg["tie_word_embeddings"] = True
    write_checkpoint(tied, config=cfg)
    add("tied-head-differs", tied)

    # tokenizers
    for name, change in TOKENIZER_CASES:
        tok = base_tokenizer()
        tok.update(change)
        add(f"tokenizer/{name}", write_checkpoint(root / f"tok-{name}", tokenizer=tok))
    for name, raw in TOKENIZER_RAW:
        path = root / name
        shutil.copytree(good, path)
        (path / "tokenizer.json").write_bytes(raw)
        add(f"tokenizer/{name}", path)
    no_tok = root / "tokenizer-missing"
    shutil.copytree(good, no_tok)
    (no_tok / "tokenizer.json").unlink()
    add("tokenizer/missing", no_tok)

    # chat templates: the model loads, the template is what fails
    for name, template in CHAT_TEMPLATES:
        add(f"template/{name}", write_checkpoint(root / f"tpl-{name}", template=template))
    listed = root / "tpl-in-tokenizer-config"
    shutil.copytree(good, listed)
    (listed / "tokenizer_config.json").write_text(
        json.dumps({"chat_template": [{"name": "default", "template": CHAT_TEMPLATES[0][1]}]})
    )
    add("template/named-default-in-tokenizer-config", listed)

    # special files where a checkpoint's files should be
    for name, target in (
        ("config.json", "config"),
        ("tokenizer.json", "tokenizer"),
        ("model.safetensors", "weights"),
        ("chat_template.jinja", "template"),
        ("tokenizer_config.json", "tokenizer-config"),
    ):
        for kind in ("fifo", "dir"):
            path = root / f"special-{target}-{kind}"
            shutil.copytree(good, path)
            f = path / name
            if f.exists():
                f.unlink()
            os.mkfifo(f) if kind == "fifo" else f.mkdir()
            add(f"special/{target}-is-{kind}", path)
    return cases


def _patch_offsets(data: bytes) -> bytes:
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8 : 8 + n])
    key = next(k for k in header if k != "__metadata__")
    header[key]["data_offsets"] = [0, 10**12]
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + data[8 + n :]


# ------------------------------------------------------------------------------------ GGUF files
def _gguf_tensors(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    q, kv = HEADS * (DIM // HEADS), KV_HEADS * (DIM // HEADS)
    vocab = len(_gguf_vocab()[0])
    out = {
        "token_embd.weight": rng.standard_normal((vocab, DIM)).astype(np.float32),
        "output_norm.weight": np.ones(DIM, np.float32),
        "output.weight": (rng.standard_normal((vocab, DIM)) / math.sqrt(DIM)).astype(np.float32),
    }
    for i in range(LAYERS):
        for name, shape in (
            ("attn_q", (q, DIM)),
            ("attn_k", (kv, DIM)),
            ("attn_v", (kv, DIM)),
            ("attn_output", (DIM, q)),
            ("ffn_gate", (FFN, DIM)),
            ("ffn_up", (FFN, DIM)),
            ("ffn_down", (DIM, FFN)),
        ):
            out[f"blk.{i}.{name}.weight"] = (rng.standard_normal(shape) / math.sqrt(shape[1])).astype(np.float32)
        out[f"blk.{i}.attn_norm.weight"] = np.ones(DIM, np.float32)
        out[f"blk.{i}.ffn_norm.weight"] = np.ones(DIM, np.float32)
    return out


def _gguf_vocab() -> tuple[list[str], list[int], list[str]]:
    from test_gguf import tiny_vocab

    return tiny_vocab()


_DROP = object()


def write_gguf(path: Path, meta: dict[str, Any] | None = None, tensors: dict[str, np.ndarray] | None = None) -> Path:
    """A small Llama GGUF; ``meta`` overrides keys (``_DROP`` removes one; a ``(value, GGUFValueType)``
    pair writes a value of the given kind, e.g. a string where a number belongs)."""
    import gguf

    tokens, types, merges = _gguf_vocab()
    values: dict[str, Any] = {
        "general.architecture": "llama",
        "llama.block_count": LAYERS,
        "llama.context_length": 64,
        "llama.embedding_length": DIM,
        "llama.feed_forward_length": FFN,
        "llama.attention.head_count": HEADS,
        "llama.attention.head_count_kv": KV_HEADS,
        "llama.rope.freq_base": 10000.0,
        "llama.attention.layer_norm_rms_epsilon": 1e-5,
        "llama.vocab_size": len(tokens),
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": "smollm",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.merges": merges,
        "tokenizer.ggml.bos_token_id": 1,
        "tokenizer.ggml.eos_token_id": 2,
    }
    values.update(meta or {})
    arch = values.pop("general.architecture")
    w = gguf.GGUFWriter(str(path), arch if isinstance(arch, str) else "llama")
    if not isinstance(arch, str) or arch is _DROP:
        w.kv_data[0].pop("general.architecture", None)
        if arch is not _DROP:
            w.add_key_value("general.architecture", *arch)
    kinds = {
        int: gguf.GGUFValueType.UINT32,
        float: gguf.GGUFValueType.FLOAT32,
        str: gguf.GGUFValueType.STRING,
        bool: gguf.GGUFValueType.BOOL,
    }
    for key, value in values.items():
        if value is _DROP:
            continue
        if isinstance(value, tuple):
            w.add_key_value(key, value[0], value[1], sub_type=value[2] if len(value) > 2 else None)
        elif isinstance(value, list):
            sub = (
                {int: gguf.GGUFValueType.INT32, float: gguf.GGUFValueType.FLOAT32, str: gguf.GGUFValueType.STRING}[type(value[0])]
                if value
                else gguf.GGUFValueType.STRING
            )
            w.add_key_value(key, value, gguf.GGUFValueType.ARRAY, sub_type=sub)
        else:
            w.add_key_value(key, value, kinds[type(value)])
    for name, t in (_gguf_tensors() if tensors is None else tensors).items():
        w.add_tensor(name, np.ascontiguousarray(t))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def gguf_cases(root: Path) -> list[Case]:
    import gguf

    V = gguf.GGUFValueType
    cases: list[Case] = []
    good = write_gguf(root / "good.gguf")

    def add(name: str, path: Path) -> None:
        cases.append(Case(f"gguf/{name}", _run(str(path))))

    meta_cases: list[tuple[str, dict[str, Any]]] = [
        ("block-count-1e7", {"llama.block_count": 10**7}),
        ("block-count-5000", {"llama.block_count": 5000}),
        ("block-count-0", {"llama.block_count": 0}),
        ("block-count-3", {"llama.block_count": 3}),
        ("block-count-1", {"llama.block_count": 1}),
        ("block-count-negative", {"llama.block_count": (-1, V.INT32)}),
        ("block-count-2^63", {"llama.block_count": (2**63, V.UINT64)}),
        ("block-count-string", {"llama.block_count": ("2", V.STRING)}),
        ("block-count-float", {"llama.block_count": (2.5, V.FLOAT32)}),
        ("block-count-bool", {"llama.block_count": (True, V.BOOL)}),
        ("block-count-array", {"llama.block_count": ([2, 2], V.ARRAY, V.UINT32)}),
        ("block-count-missing", {"llama.block_count": _DROP}),
        ("head-count-0", {"llama.attention.head_count": 0}),
        ("head-count-3", {"llama.attention.head_count": 3}),
        ("head-count-2^31", {"llama.attention.head_count": 2**31}),
        ("head-count-missing", {"llama.attention.head_count": _DROP}),
        ("head-count-kv-0", {"llama.attention.head_count_kv": 0}),
        ("head-count-kv-3", {"llama.attention.head_count_kv": 3}),
        ("head-count-kv-8", {"llama.attention.head_count_kv": 8}),
        ("embedding-1e9", {"llama.embedding_length": 10**9}),
        ("embedding-0", {"llama.embedding_length": 0}),
        ("embedding-64", {"llama.embedding_length": 64}),
        ("ffn-0", {"llama.feed_forward_length": 0}),
        ("ffn-1e9", {"llama.feed_forward_length": 10**9}),
        ("context-0", {"llama.context_length": 0}),
        ("vocab-1e9", {"llama.vocab_size": 10**9}),
        ("vocab-5", {"llama.vocab_size": 5}),
        ("key-length-odd", {"llama.attention.key_length": 7}),
        ("value-length-differs", {"llama.attention.value_length": 16}),
        ("rope-partial", {"llama.rope.dimension_count": 4}),
        ("rope-base-nan", {"llama.rope.freq_base": float("nan")}),
        ("rope-base-inf", {"llama.rope.freq_base": float("inf")}),
        ("rope-base-negative", {"llama.rope.freq_base": -1.0}),
        ("rope-base-string", {"llama.rope.freq_base": ("1e4", V.STRING)}),
        ("eps-nan", {"llama.attention.layer_norm_rms_epsilon": float("nan")}),
        ("eps-negative", {"llama.attention.layer_norm_rms_epsilon": -1.0}),
        ("arch-gpt2", {"general.architecture": "gpt2"}),
        ("arch-bert", {"general.architecture": "bert"}),
        ("arch-int", {"general.architecture": (7, V.UINT32)}),
        ("arch-missing", {"general.architecture": _DROP}),
        ("experts", {"llama.expert_count": 8}),
        ("rope-scaling-yarn", {"llama.rope.scaling.type": "yarn"}),
        ("tokens-missing", {"tokenizer.ggml.tokens": _DROP, "llama.vocab_size": _DROP}),
        ("tokens-string", {"tokenizer.ggml.tokens": "abc"}),
        ("tokens-duplicate", {"tokenizer.ggml.tokens": ["a"] * len(_gguf_vocab()[0])}),
        ("tokens-ints", {"tokenizer.ggml.tokens": list(range(len(_gguf_vocab()[0])))}),
        ("tokens-long", {"tokenizer.ggml.tokens": [*_gguf_vocab()[0][:-1], "x" * 100_000]}),
        ("token-types-short", {"tokenizer.ggml.token_type": [1, 1, 1]}),
        ("token-types-strings", {"tokenizer.ggml.token_type": ["x"] * len(_gguf_vocab()[0])}),
        ("scores-nan", {"tokenizer.ggml.scores": [float("nan")] * len(_gguf_vocab()[0])}),
        ("scores-short", {"tokenizer.ggml.scores": [0.0, 1.0]}),
        ("merges-no-space", {"tokenizer.ggml.merges": ["Ġt", "he"]}),
        ("merges-unknown-tokens", {"tokenizer.ggml.merges": ["zz yy"]}),
        ("merges-three-parts", {"tokenizer.ggml.merges": ["Ġ t h"]}),
        ("merges-ints", {"tokenizer.ggml.merges": [1, 2, 3]}),
        ("tokenizer-model-bert", {"tokenizer.ggml.model": "bert"}),
        ("tokenizer-model-int", {"tokenizer.ggml.model": (3, V.UINT32)}),
        ("bos-huge", {"tokenizer.ggml.bos_token_id": 10**6}),
        ("eos-negative", {"tokenizer.ggml.eos_token_id": (-1, V.INT32)}),
        ("eos-string", {"tokenizer.ggml.eos_token_id": ("2", V.STRING)}),
        ("template-loop", {"tokenizer.chat_template": CHAT_TEMPLATES[0][1]}),
        ("template-include", {"tokenizer.chat_template": "{% include 'x' %}"}),
        ("template-int", {"tokenizer.chat_template": (5, V.UINT32)}),
    ]
    for i, (name, meta) in enumerate(meta_cases):
        add(f"meta/{name}", write_gguf(root / f"meta{i}.gguf", meta=meta))

    t = _gguf_tensors()
    tensor_cases: list[tuple[str, dict[str, np.ndarray]]] = [
        ("extra-unknown", {**t, "mystery.weight": np.zeros(4, np.float32)}),
        ("extra-layer", {**t, "blk.9.attn_q.weight": np.zeros((DIM, DIM), np.float32)}),
        ("extra-o-bias-one-layer", {**t, "blk.0.attn_output.bias": np.zeros(DIM, np.float32)}),
        ("rope-freqs", {**t, "rope_freqs.weight": np.ones(4, np.float32)}),
        ("missing-ffn-up", {k: v for k, v in t.items() if k != "blk.1.ffn_up.weight"}),
        ("missing-embedding", {k: v for k, v in t.items() if k != "token_embd.weight"}),
        ("wrong-shape", {**t, "blk.0.ffn_norm.weight": np.ones(DIM + 2, np.float32)}),
        ("nan", {**t, "blk.0.attn_v.weight": np.full((KV_HEADS * DIM // HEADS, DIM), np.nan, np.float32)}),
        ("inf", {**t, "output_norm.weight": np.full(DIM, np.inf, np.float32)}),
        ("3d-tensor", {**t, "blk.0.attn_norm.weight": np.ones((DIM, 1, 1), np.float32)}),
        ("no-tensors", {}),
    ]
    for name, tensors in tensor_cases:
        add(f"tensors/{name}", write_gguf(root / f"tensors-{name}.gguf", tensors=tensors))

    data = good.read_bytes()
    raw_cases = {
        "empty": b"",
        "garbage": b"this is not a gguf file" * 20,
        "magic-only": b"GGUF",
        "header-only": data[:24],
        "version-99": data[:4] + struct.pack("<I", 99) + data[8:],
        "n-tensors-huge": data[:8] + struct.pack("<Q", 2**62) + data[16:],
        "n-kv-huge": data[:16] + struct.pack("<Q", 2**62) + data[24:],
    }
    for frac in (0.05, 0.3, 0.6, 0.9, 0.999):
        raw_cases[f"truncated-{frac}"] = data[: int(len(data) * frac)]
    for offset in (40, 200, 1000):  # a flipped byte inside the key/value section
        flipped = bytearray(data)
        flipped[offset] ^= 0xFF
        raw_cases[f"flip-{offset}"] = bytes(flipped)
    for name, raw in raw_cases.items():
        path = root / f"raw-{name}.gguf"
        path.write_bytes(raw)
        add(f"bytes/{name}", path)
    fifo = root / "fifo.gguf"
    os.mkfifo(fifo)
    add("special/fifo", fifo)
    folder = root / "folder.gguf"
    folder.mkdir()
    add("special/directory-named-gguf", folder)
    in_dir = root / "dir-with-fifo-gguf"
    in_dir.mkdir()
    os.mkfifo(in_dir / "model.gguf")
    add("special/directory-holding-a-fifo", in_dir)
    return cases


# ------------------------------------------------------------------------------- other paths
def path_cases(root: Path) -> list[Case]:
    cases: list[Case] = []
    empty = root / "empty-file"
    empty.write_bytes(b"")
    cases.append(Case("path/empty-file", _run(str(empty))))
    text = root / "notes.txt"
    text.write_text("hello")
    cases.append(Case("path/text-file", _run(str(text))))
    fifo = root / "plain-fifo"
    os.mkfifo(fifo)
    cases.append(Case("path/fifo", _run(str(fifo))))
    empty_dir = root / "empty-dir"
    empty_dir.mkdir()
    cases.append(Case("path/empty-directory", _run(str(empty_dir))))
    loop = root / "loop"
    loop.symlink_to(loop)
    cases.append(Case("path/symlink-loop", _run(str(loop))))
    cases.append(Case("path/dev-null", _run("/dev/null")))
    cases.append(Case("path/dev-zero", _run("/dev/zero")))
    cases.append(Case("path/very-long", _run(str(root / ("x" * 5000)))))
    cases.append(Case("path/missing", _run(str(root / "nope"))))
    return cases


# ---------------------------------------------------------------------------------- command lines
def command_cases(root: Path) -> list[Case]:
    tiny = "random:layers=1,heads=2,kv_heads=1,dim=32,ctx=64,seed=1"

    def run(*extra: str, model: str = tiny, prompt: str | None = "hello") -> list[str]:
        argv = ["run", "--model", model, "--steps", "2", "--json"]
        if prompt is not None:
            argv += ["--prompt", prompt]
        return argv + list(extra)

    bad_config = root / "memory-configs"
    bad_config.mkdir()
    mem_cfg = {
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "hidden_size": 256,
        "vocab_size": 1000,
        "model_type": "mistral",
    }
    memory_configs: dict[str, Any] = {
        "window-negative": {**mem_cfg, "sliding_window": -4096},
        "window-zero": {**mem_cfg, "sliding_window": 0},
        "window-float": {**mem_cfg, "sliding_window": 2.5},
        "window-string": {**mem_cfg, "sliding_window": "4096"},
        "window-bool": {**mem_cfg, "sliding_window": True},
        "layers-float": {**mem_cfg, "num_hidden_layers": 2.5},
        "layers-string": {**mem_cfg, "num_hidden_layers": "4"},
        "layers-bool": {**mem_cfg, "num_hidden_layers": True},
        "layers-huge": {**mem_cfg, "num_hidden_layers": 10**12, "model_type": "gemma2", "sliding_window": 8},
        "heads-zero": {**mem_cfg, "num_attention_heads": 0},
        "kv-heads-negative": {**mem_cfg, "num_key_value_heads": -2},
        "hidden-nan": {**mem_cfg, "hidden_size": float("nan")},
        "head-dim-inf": {**mem_cfg, "head_dim": float("inf")},
        "missing-layers": {k: v for k, v in mem_cfg.items() if k != "num_hidden_layers"},
        "layer-types-string": {**mem_cfg, "layer_types": "sliding", "sliding_window": 8},
        "not-object": [1, 2],
        "vocab-string": {**mem_cfg, "vocab_size": "big"},
    }
    cases: list[Case] = []
    for name, cfg in memory_configs.items():
        path = bad_config / f"{name}.json"
        path.write_text(json.dumps(cfg))
        cases.append(Case(f"memory/config-{name}", ["memory", "--config", str(path), "--context", "4096"]))
    invalid = bad_config / "invalid.json"
    invalid.write_bytes(b"{not json")
    fifo = bad_config / "fifo.json"
    os.mkfifo(fifo)
    cases += [
        Case("memory/config-invalid-json", ["memory", "--config", str(invalid), "--context", "8"]),
        Case("memory/config-directory", ["memory", "--config", str(bad_config), "--context", "8"]),
        Case("memory/config-missing", ["memory", "--config", str(bad_config / "nope.json"), "--context", "8"]),
        Case("memory/config-fifo", ["memory", "--config", str(fifo), "--context", "8"], seconds=3),
    ]
    memory = [
        ["--preset", "llama-2-7b", "--context", "-1"],
        ["--preset", "llama-2-7b", "--context", "x"],
        ["--preset", "llama-2-7b"],
        ["--preset", "nope", "--context", "8"],
        ["--layers", "0", "--kv-heads", "8", "--head-dim", "128", "--context", "8"],
        ["--layers", "32", "--kv-heads", "-1", "--head-dim", "128", "--context", "8"],
        ["--layers", "32", "--kv-heads", "8", "--head-dim", "1.5", "--context", "8"],
        ["--layers", "32", "--kv-heads", "8", "--context", "8"],
        ["--preset", "llama-2-7b", "--context", "8", "--batch", "0"],
        ["--preset", "llama-2-7b", "--context", "8", "--kv-bits", "3"],
        ["--preset", "llama-2-7b", "--context", "8", "--window", "0"],
        ["--preset", "llama-2-7b", "--context", "8", "--window", "-5"],
        ["--preset", "llama-2-7b", "--context", "8", "--window", "2.5"],
    ]
    cases += [Case(f"memory/{i}", ["memory", *argv]) for i, argv in enumerate(memory)]

    runs: list[tuple[str, list[str]]] = [
        ("seed-2^64", run("--seed", str(2**64))),
        ("seed-huge", run("--seed", "9" * 40)),
        ("seed-negative", run("--seed", "-1")),
        ("seed-float", run("--seed", "1e3")),
        ("seed-text", run("--seed", "abc")),
        ("threads-2^64", run("--threads", str(2**64))),
        ("threads-zero", run("--threads", "0")),
        ("threads-negative", run("--threads", "-3")),
        ("threads-text", run("--threads", "many")),
        ("global-threads-2^64", ["--threads", str(2**64), *run()]),
        ("prompt-not-utf8", run(prompt=b"caf\xe9 \xff".decode("utf-8", "surrogateescape"))),
        ("prompt-empty", run(prompt="")),
        ("prompt-blank", run(prompt="   \n\t")),
        ("prompt-over-long", run(prompt="x" * 300_000)),
        ("prompt-longer-than-context", run(prompt="y" * 100)),
        ("no-prompt", run(prompt=None)),
        ("prompt-ids-empty", run("--prompt-ids", "", prompt=None)),
        ("prompt-ids-text", run("--prompt-ids", "a,b", prompt=None)),
        ("prompt-ids-negative", run("--prompt-ids", "-1,2", prompt=None)),
        ("prompt-ids-beyond-vocab", run("--prompt-ids", "1,99999", prompt=None)),
        ("prompt-ids-2^64", run("--prompt-ids", str(2**64), prompt=None)),
        ("prompt-ids-float", run("--prompt-ids", "1.5", prompt=None)),
        ("lanes-window-empty", run("--lanes", "window:")),
        ("lanes-foo", run("--lanes", "foo")),
        ("lanes-duplicate", run("--lanes", "kv,kv")),
        ("lanes-empty", run("--lanes", "")),
        ("lanes-commas", run("--lanes", ",,")),
        ("lanes-window-zero", run("--lanes", "window:0")),
        ("lanes-window-negative", run("--lanes", "window:-1")),
        ("lanes-window-text", run("--lanes", "window:abc")),
        ("lanes-window-huge", run("--lanes", "window:" + "9" * 40)),
        ("lanes-int4-g0", run("--lanes", "int4:g0")),
        ("lanes-paged-0", run("--lanes", "paged:0")),
        ("lanes-120", run("--lanes", ",".join(["kv"] * 120))),
        ("reference-unknown", run("--reference", "nope")),
        ("temperature-1e-45", run("--temperature", "1e-45")),
        ("temperature-nan", run("--temperature", "nan")),
        ("temperature-negative", run("--temperature", "-1")),
        ("temperature-inf", run("--temperature", "inf")),
        ("temperature-1e308", run("--temperature", "1e308")),
        ("temperature-text", run("--temperature", "hot")),
        ("top-p-zero", run("--temperature", "1", "--top-p", "0")),
        ("top-p-negative", run("--temperature", "1", "--top-p", "-0.5")),
        ("top-p-above-1", run("--temperature", "1", "--top-p", "1.5")),
        ("top-p-nan", run("--temperature", "1", "--top-p", "nan")),
        ("top-k-zero", run("--temperature", "1", "--top-k", "0")),
        ("top-k-negative", run("--temperature", "1", "--top-k", "-1")),
        ("top-k-text", run("--temperature", "1", "--top-k", "x")),
        ("steps-zero", run("--steps", "0")),
        ("steps-negative", run("--steps", "-1")),
        ("steps-huge", run("--steps", str(10**12))),
        ("steps-text", run("--steps", "x")),
        ("device-tpu", run("--device", "tpu")),
        ("dtype-fp16-cpu", run("--dtype", "fp16")),
        ("save-no-folder", run("--save", str(root / "no" / "such" / "dir" / "x.kvsim"))),
        ("unknown-option", run("--frobnicate")),
    ]
    models = [
        "",
        "   ",
        "nope",
        "random:vocab=1000000000",
        "random:layers=2.5",
        "random:heads=3,kv_heads=2",
        "random:vocab=10",
        "random:foo=1",
        "random:dim=-5",
        "random:rope_theta=nan",
        "random:window=0",
        "random:seed=-1",
        f"random:seed={2**64}",
        "random:layers=1_000",
        "random:dim=" + "9" * 5000,
        "random:layers=100,dim=4096",
        "random:family=gpt2,kv_heads=2",
        "random:family=mamba",
        "random:tie=maybe",
        "random:layers",
        "random:head_dim=3",
        "smollm2-135m",
    ]
    runs += [(f"model-{m[:40]!r}", run(model=m)) for m in models]
    cases += [Case(f"run/{name}", argv) for name, argv in runs]
    cases += [
        Case("models/get-nope", ["models", "get", "nope"]),
        Case("models/get-empty", ["models", "get", ""]),
        Case("cli/unknown-command", ["frobnicate"]),
        Case("cli/run-unknown-option", ["run", "--bogus"]),
        Case("inspect/missing", ["inspect", str(root / "missing.kvsim")]),
        Case("inspect/fifo", ["inspect", str(fifo)]),
    ]
    return cases


def build_corpus(root: Path) -> list[Case]:
    root.mkdir(parents=True, exist_ok=True)
    return (
        checkpoint_cases(root / "hf")
        + gguf_cases(_mkdir(root / "gguf"))
        + path_cases(_mkdir(root / "paths"))
        + command_cases(_mkdir(root / "cli"))
    )


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


# ----------------------------------------------------------------------------------- traces
def build_trace_corpus(root: Path, good: Path) -> list[Case]:
    """Damaged copies of the saved run ``good``: each is a case for ``Trace.load`` and ``kvsim inspect``."""
    root.mkdir(parents=True, exist_ok=True)
    data = good.read_bytes()
    files: dict[str, bytes] = {"empty": b"", "garbage": b"PK\x03\x04" + b"\x00" * 100}
    for frac in (0.1, 0.5, 0.9, 0.99):
        files[f"truncated-{frac}"] = data[: int(len(data) * frac)]
    for offset in range(7, len(data), max(1, len(data) // 12)):
        flipped = bytearray(data)
        flipped[offset] ^= 0x5A
        files[f"flip-{offset}"] = bytes(flipped)
    with zipfile.ZipFile(good) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        arrays = zf.read("arrays.npz")
        names = zf.namelist()
    for method, label in ((9, "deflate64"), (99, "aes"), (14, "lzma"), (12, "bzip2")):
        files[f"method-{label}"] = _patch_zip(data, names, method=method)
    files["encrypted-flag"] = _patch_zip(data, names, flag=0x1)

    def with_manifest(change) -> bytes:
        m = copy.deepcopy(manifest)
        change(m)
        return _zip({"manifest.json": json.dumps(m).encode(), "arrays.npz": arrays})

    cfg = manifest.get("meta", {}).get("config", {})
    files["manifest-deep"] = _zip(
        {"manifest.json": b'{"schema": "kvsim-trace", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "arrays.npz": arrays}
    )
    deep = copy.deepcopy(manifest)
    deep["meta"]["deep"] = "__DEEP__"
    files["manifest-deep-dicts"] = _zip(
        {
            "manifest.json": json.dumps(deep).encode().replace(b'"__DEEP__"', b'{"a": ' * 50_000 + b"1" + b"}" * 50_000),
            "arrays.npz": arrays,
        }
    )
    files["manifest-not-json"] = _zip({"manifest.json": b"{{{", "arrays.npz": arrays})
    files["manifest-list"] = _zip({"manifest.json": b"[]", "arrays.npz": arrays})
    files["manifest-missing"] = _zip({"arrays.npz": arrays})
    files["arrays-missing"] = _zip({"manifest.json": json.dumps(manifest).encode()})
    files["arrays-garbage"] = _zip({"manifest.json": json.dumps(manifest).encode(), "arrays.npz": b"garbage"})
    files["arrays-pickle"] = _zip({"manifest.json": json.dumps(manifest).encode(), "arrays.npz": _pickled_npz()})
    files["heads-3-over-2"] = with_manifest(lambda m: m["meta"]["config"].update({"n_heads": 3, "n_kv_heads": 2}))
    files["heads-zero"] = with_manifest(lambda m: m["meta"]["config"].update({"n_heads": 0}))
    files["layers-huge"] = with_manifest(lambda m: m["meta"]["config"].update({"n_layers": 10**9}))
    files["layers-string"] = with_manifest(lambda m: m["meta"]["config"].update({"n_layers": "1"}))
    files["config-not-object"] = with_manifest(lambda m: m["meta"].update({"config": [1]}))
    files["lanes-120"] = with_manifest(lambda m: m["meta"].update({"lanes": [m["meta"]["lanes"][0]] * 120}))
    files["lanes-empty"] = with_manifest(lambda m: m["meta"].update({"lanes": []}))
    files["version-99"] = with_manifest(lambda m: m.update({"version": 99}))
    files["schema-other"] = with_manifest(lambda m: m.update({"schema": "other"}))
    files["steps-not-list"] = with_manifest(lambda m: m.update({"steps": {"a": 1}}))
    files["steps-empty"] = with_manifest(lambda m: m.update({"steps": []}))
    files["nan-numbers"] = _zip({"manifest.json": json.dumps(_nan_everywhere(manifest)).encode(), "arrays.npz": arrays})
    files["theta-nan"] = with_manifest(lambda m: m["meta"]["config"].update({"rope_theta": float("nan")}))
    if cfg:
        files["vocab-zero"] = with_manifest(lambda m: m["meta"]["config"].update({"vocab_size": 0}))
    cases: list[Case] = []
    for name, raw in files.items():
        path = root / f"{name}.kvsim"
        path.write_bytes(raw)
        cases.append(Case(f"trace/{name}", [str(path)], kind="trace"))
        cases.append(Case(f"inspect/{name}", ["inspect", str(path)]))
    return cases


# ------------------------------------------------------------- saved runs of the newer kinds
LANES = "kv,h2o:4,tova:4,snapkv:4,spec:2:lookup,kv@w8"  # eviction by attention, drafts, quantized weights


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _damaged_copies(good: Path, changes: dict[str, Any]) -> dict[str, bytes]:
    """``good`` with each change applied to a copy of its manifest and arrays (``change(manifest, arrays)``)."""
    import io

    with zipfile.ZipFile(good) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        with np.load(io.BytesIO(zf.read("arrays.npz")), allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    out = {}
    for name, change in changes.items():
        m, a = copy.deepcopy(manifest), {k: v.copy() for k, v in arrays.items()}
        change(m, a)
        out[name] = _zip({"manifest.json": json.dumps(m).encode(), "arrays.npz": _npz(a)})
    return out


def _first(arrays: dict[str, np.ndarray], suffix: str) -> str:
    return next(k for k in sorted(arrays) if k.endswith(suffix))


def _set(arrays: dict[str, np.ndarray], suffix: str, index: tuple, value: float) -> None:
    arrays[_first(arrays, suffix)][index] = value


def _lane_at(m: dict[str, Any], key: str) -> dict[str, Any]:
    """The first step's lane record that has ``key`` set (a drafting lane: ``drafted``)."""
    return next(lane for step in m["steps"] for lane in step["lanes"] if lane.get(key))


def _meta_lane(m: dict[str, Any], key: str) -> dict[str, Any]:
    return next(lane for lane in m["meta"]["lanes"] if key in lane)


def _policy_lane(m: dict[str, Any], policy: str) -> dict[str, Any]:
    return next(lane for lane in m["meta"]["lanes"] if lane["policy"] == policy)


def _h2o_over_budget(m: dict[str, Any], a: dict[str, np.ndarray]) -> None:
    """An ``h2o:4`` lane (4 heavy + 4 recent rows) holding 12 rows at its first step: each one consistent
    with the others (positions, scores, its count), only more than the policy keeps."""
    j = next(j for j, lane in enumerate(m["steps"][0]["lanes"]) if lane["policy"] == "h2o")
    rows = 12
    a[f"s0_l{j}_held_positions"] = (
        np.arange(rows, dtype=np.int32).reshape(1, 1, rows).repeat(a[f"s0_l{j}_held_positions"].shape[1], 1)
    )
    a[f"s0_l{j}_held_scores"] = np.full(a[f"s0_l{j}_held_positions"].shape, 0.5, dtype=np.float32)
    m["steps"][0]["lanes"][j]["cache_tokens"] = rows


def lane_run_changes() -> dict[str, Any]:
    """Damage to a trace whose lanes evict by attention, draft and quantize weights: each is impossible."""
    return {
        "held-position-negative": lambda m, a: _set(a, "_held_positions", (0, 0, 0), -5),
        "held-position-huge": lambda m, a: _set(a, "_held_positions", (0, 0, -1), 2**30),
        "held-positions-backwards": lambda m, a: a[_first(a, "_held_positions")].__setitem__(
            (0, 0, slice(None)), a[_first(a, "_held_positions")][0, 0, ::-1].copy()
        ),
        "held-rows-not-its-count": lambda m, a: next(lane for lane in m["steps"][0]["lanes"] if lane["policy"] == "h2o").update(
            cache_tokens=17
        ),
        "h2o-over-its-budget": _h2o_over_budget,
        "evicted-position-huge": lambda m, a: _set(a, "_held_evicted", (0, 0, 0), 2**30),
        "score-minus-1e30": lambda m, a: _set(a, "_held_scores", (0, 0, 0), -1e30),
        "score-huge": lambda m, a: _set(a, "_held_scores", (0, 0, 0), 3e38),
        "score-nan": lambda m, a: _set(a, "_held_scores", (0, 0, 0), float("nan")),
        "draft-token-1e9": lambda m, a: _set(a, "_draft_token_ids", (0,), 10**9),
        "draft-token-negative": lambda m, a: _set(a, "_draft_token_ids", (0,), -1),
        "accepted-and-rolled-back-over-drafted": lambda m, a: _lane_at(m, "drafted").update(accepted=2, rolled_back=2),
        "drafted-1e9": lambda m, a: _lane_at(m, "drafted").update(drafted=10**9),
        "weight-bytes-nan": lambda m, a: _meta_lane(m, "weight_bytes").update(weight_bytes=float("nan")),
        "weight-bytes-text": lambda m, a: _meta_lane(m, "weight_bytes").update(weight_bytes="\x1b[2J"),
        "weight-bytes-negative": lambda m, a: _meta_lane(m, "weight_bytes").update(weight_bytes=-1),
        "quantized-over-total": lambda m, a: _meta_lane(m, "quantized_weight_bytes").update(quantized_weight_bytes=10**12),
        "draft-k-1e9": lambda m, a: _meta_lane(m, "draft_k").update(draft_k=10**9),
        "draft-name-not-text": lambda m, a: _meta_lane(m, "draft").update(draft=[1]),
        # a lane's options are what its grammar parsed: snapkv:0, snapkv:4:w5 and text where a count goes are not
        "snapkv-budget-zero": lambda m, a: _policy_lane(m, "snapkv")["options"].update(budget=0),
        "snapkv-window-over-budget": lambda m, a: _policy_lane(m, "snapkv")["options"].update(window=5),
        "h2o-heavy-escape": lambda m, a: _policy_lane(m, "h2o")["options"].update(heavy="\x1b[2J"),
    }


def _run0(m: dict[str, Any]) -> dict[str, Any]:
    return m["runs"][0]


def _preempted(m: dict[str, Any]) -> int:
    return next(r["index"] for r in _run0(m)["requests"] if r.get("preemptions"))


def batched_run_changes() -> dict[str, Any]:
    """Damage to a continuously batched requests run (version 2) that preempted a request: each impossible."""
    return {
        "pool-free-1048576": lambda m, a: _run0(m)["batches"][0].update(free_blocks=1048576),
        "held-more-than-the-pool": lambda m, a: _run0(m)["batches"][0].update(held_blocks=_run0(m)["pool_blocks"] + 1),
        "cached-over-free": lambda m, a: _run0(m)["batches"][-1].update(
            cached_free_blocks=_run0(m)["batches"][-1]["free_blocks"] + 1
        ),
        "preemptions-1e18": lambda m, a: _run0(m)["requests"][_preempted(m)].update(preemptions=10**18),
        "preemptions-not-its-steps": lambda m, a: _run0(m)["requests"][0].update(preemptions=1),
        "recomputed-1e9": lambda m, a: _run0(m)["requests"][_preempted(m)].update(recomputed_rows=10**9),
        "clock-backwards": lambda m, a: _run0(m)["batches"][-1].update(clock_ms=0.0),
        "max-batched-tokens-escape": lambda m, a: _run0(m)["meta"].update(max_batched_tokens="\x1b[2J\x1b]0;owned\x07"),
        "max-batched-tokens-zero": lambda m, a: _run0(m)["meta"].update(max_batched_tokens=0),
        "chunked-prefill-text": lambda m, a: _run0(m)["meta"].update(chunked_prefill="yes"),
        "meta-unknown-key": lambda m, a: _run0(m)["meta"].update(shown="\x1b[31m"),
        "step-over-budget": lambda m, a: _run0(m)["batches"][0]["entries"][0].__setitem__(3, 10**6),
        "entry-twice": lambda m, a: _run0(m)["batches"][0]["entries"].append(list(_run0(m)["batches"][0]["entries"][0])),
        "arrived-after-its-token": lambda m, a: _run0(m)["requests"][0].update(arrival_ms=1e8),
    }


def build_new_kinds_corpus(root: Path, lanes_good: Path, batched_good: Path) -> list[Case]:
    """Generated damaged copies of a real trace with the newer lanes and of a real batched requests run:
    each must be refused in one line, by ``Trace.load`` / ``load_runs`` and by ``kvsim inspect``."""
    root.mkdir(parents=True, exist_ok=True)
    cases: list[Case] = []
    for kind, good, changes in (
        ("trace", lanes_good, lane_run_changes()),
        ("requests", batched_good, batched_run_changes()),
    ):
        for name, raw in _damaged_copies(good, changes).items():
            path = root / f"{kind}-{name}.kvsim"
            path.write_bytes(raw)
            cases.append(Case(f"{kind}/{name}", [str(path)], kind=kind))
            cases.append(Case(f"inspect/{kind}-{name}", ["inspect", str(path)]))
    return cases


def _zip(members: dict[str, bytes]) -> bytes:
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, raw in members.items():
            zf.writestr(name, raw)
    return buf.getvalue()


def _patch_zip(data: bytes, names: list[str], method: int | None = None, flag: int | None = None) -> bytes:
    """``data`` with every member's compression method (or general-purpose flag) rewritten, in both the
    local headers and the central directory: a member zipfile cannot (or must not) decompress."""
    out = bytearray(data)
    for sig, method_at, flag_at in ((b"PK\x03\x04", 8, 6), (b"PK\x01\x02", 10, 8)):
        start = 0
        while (i := out.find(sig, start)) >= 0:
            if method is not None:
                out[i + method_at : i + method_at + 2] = struct.pack("<H", method)
            if flag is not None:
                old = struct.unpack("<H", out[i + flag_at : i + flag_at + 2])[0]
                out[i + flag_at : i + flag_at + 2] = struct.pack("<H", old | flag)
            start = i + 4
    return bytes(out)


def _pickled_npz() -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, step_0_q=np.array([{"x": 1}], dtype=object))
    return buf.getvalue()


def _nan_everywhere(value: Any) -> Any:
    if isinstance(value, float):
        return float("nan")
    if isinstance(value, int) and not isinstance(value, bool):
        return float("nan")
    if isinstance(value, dict):
        return {k: _nan_everywhere(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nan_everywhere(v) for v in value]
    return value


# ------------------------------------------------------------------- the child process's side
class _CaseTimeout(BaseException):
    """Raised by the alarm; a BaseException so no ``except Exception`` in the code under test eats it."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise _CaseTimeout()


def run_one(case: Case, scratch: Path) -> dict[str, Any]:
    """Run ``case`` in this process; what it returned, wrote to fd 2 and how long it took."""
    import resource
    import signal

    from kvsim.cli.entry import main

    err_file, out_file = scratch / "stderr", scratch / "stdout"
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(err_file, "wb") as err, open(out_file, "wb") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
    outcome: dict[str, Any] = {"name": case.name, "argv": [a[:200] for a in case.argv]}
    start = time.monotonic()
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(case.seconds * HANG_FACTOR)  # a hang guard, not a speed bound (a busy machine is slow, not hung)
    try:
        if case.kind in ("trace", "requests"):
            from kvsim.engine.trace import Trace, TraceError
            from kvsim.serving.saved_runs import load_runs

            try:
                Trace.load(case.argv[0]) if case.kind == "trace" else load_runs(case.argv[0])
                outcome["rc"] = "loaded"
            except TraceError as exc:
                outcome["rc"] = "TraceError"
                outcome["message"] = str(exc)[:300]
        else:
            outcome["rc"] = main(case.argv)
    except _CaseTimeout:
        outcome["rc"] = "timeout"
    except BaseException as exc:  # noqa: BLE001 - anything that escapes is the finding
        outcome["rc"] = "raised"
        outcome["exception"] = f"{type(exc).__module__}.{type(exc).__name__}: {str(exc)[:300]}"
    finally:
        signal.alarm(0)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
    outcome["seconds"] = round(time.monotonic() - start, 3)
    outcome["peak_rss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    outcome["stderr"] = err_file.read_bytes()[:4000].decode("utf-8", "replace")
    return outcome


def run_cases(cases_file: str, results_file: str) -> None:
    """Child-process entry: memory limit on, then every case of ``cases_file``, results as JSON."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    import kvsim.cli.entry  # noqa: F401 - imported once, before the clock of the first case

    cases = [Case(**c) for c in json.loads(Path(cases_file).read_text())]
    scratch = Path(results_file).parent
    results = []
    start = time.monotonic()
    for case in cases:
        results.append(run_one(case, scratch))
        Path(results_file).write_text(json.dumps({"results": results}))  # what was done survives a crash
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    Path(results_file).write_text(
        json.dumps({"results": results, "peak_rss_kb": peak_kb, "seconds": round(time.monotonic() - start, 1)})
    )


def write_cases(cases: list[Case], path: Path) -> None:
    path.write_text(json.dumps([asdict(c) for c in cases]))


if __name__ == "__main__":
    here = Path(__file__).parent
    # the shared test modules beside this file and every folder of tests (it borrows test_gguf's vocabulary)
    sys.path[:0] = [
        str(here),
        *(
            str(d)
            for d in sorted(here.rglob("*"))
            if d.is_dir() and all(n.isidentifier() and n[0] != "_" for n in d.relative_to(here).parts)
        ),
    ]
    run_cases(sys.argv[1], sys.argv[2])
