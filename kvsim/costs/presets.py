"""Presets of real models for the memory arithmetic: each model's published config.json numbers (the
K/V head count, per-layer window patterns), parameter counts computed from those shapes (the tests
hold them to the published totals), and ``preset_from_hf_config`` for any config.json a user brings.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .memory import MemoryInputError, kv_cache_bytes, mla_cache_bytes

if TYPE_CHECKING:
    from ..models.config import ModelConfig


@dataclass(frozen=True)
class Preset:
    name: str
    source: str  # the Hugging Face repo whose config.json the numbers come from
    arch: str  # gpt2 | llama | gemma2 | gemma3 | falcon: decides how parameters are counted
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    hidden: int
    intermediate: int
    vocab: int
    context: int
    tied: bool = False
    qkv_bias: bool = False
    layer_windows: tuple[int | None, ...] | None = None
    published_params: int | None = None
    # latent attention (MLA, arch deepseek3): the cache holds per token and layer one latent of kv_lora_rank
    # values and one RoPE key of qk_rope_head_dim — L · (d_c + d_R) · n values, no factor 2, no K/V heads
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    q_lora_rank: int = 0  # the query's own compression (DeepSeek-V2/V3): counted in the parameters only
    v_head_dim: int = 0
    #: mixture of experts: (routed experts, shared experts, an expert's MLP width, leading dense layers)
    experts: tuple[int, int, int, int] | None = None

    @property
    def n_params(self) -> int:
        return count_params(self)

    @property
    def latent(self) -> tuple[int, int] | None:
        """(d_c, d_R) of a latent-attention cache; None for K/V heads."""
        return (self.kv_lora_rank, self.qk_rope_head_dim) if self.kv_lora_rank else None

    def kv_bytes(self, tokens: int, batch: int = 1, bits: float = 16, window: int | None = None) -> int:
        if self.kv_lora_rank:  # one latent + one RoPE key a token and layer (a window caps the tokens held)
            held = tokens if window is None else min(tokens, window)
            return mla_cache_bytes(self.layers, self.kv_lora_rank, self.qk_rope_head_dim, held, batch, bits)
        return kv_cache_bytes(self.layers, self.kv_heads, self.head_dim, tokens, batch, bits, window, self.layer_windows)


def count_params(p: Preset) -> int:
    if p.arch == "deepseek3":
        return _count_deepseek3(p)
    d, hd, v = p.hidden, p.head_dim, p.vocab
    q_out, kv_out = p.heads * hd, p.kv_heads * hd
    emb = v * d * (1 if p.tied else 2)
    if p.arch == "gpt2":
        per_layer = (d * 3 * d + 3 * d) + (d * d + d) + (d * p.intermediate + p.intermediate) + (p.intermediate * d + d) + 4 * d
        return emb + p.context * d + p.layers * per_layer + 2 * d
    if p.arch == "falcon":  # fused QKV (MQA), parallel attention + MLP, one LayerNorm per block
        per_layer = d * (q_out + 2 * kv_out) + q_out * d + 2 * d * p.intermediate + 2 * d
        return emb + p.layers * per_layer + 2 * d
    norms = 4 * d if p.arch in ("gemma2", "gemma3") else 2 * d  # Gemma: a norm before and after each sub-layer
    norms += 2 * hd if p.arch == "gemma3" else 0  # QK-norm: one weight per head dim for q and for k
    bias = (q_out + 2 * kv_out) if p.qkv_bias else 0
    per_layer = d * (q_out + 2 * kv_out) + bias + q_out * d + 3 * d * p.intermediate + norms
    return emb + p.layers * per_layer + d


def _count_deepseek3(p: Preset) -> int:
    """DeepSeek-V3's modeling code, module by module: MLA (q_a, q_a_layernorm, q_b, kv_a_proj_with_mqa,
    kv_a_layernorm, kv_b, o), two RMSNorms a layer, dense MLPs on the first layers, then MoE layers (routed and
    shared experts, the router's weight and its score-correction bias); untied embeddings. The multi-token
    prediction module (the extra 61st layer of the published checkpoint, 14B) is not part of the 671B."""
    d, h, nope, rope = p.hidden, p.heads, p.head_dim, p.qk_rope_head_dim
    r, ql, vd = p.kv_lora_rank, p.q_lora_rank, p.v_head_dim
    assert p.experts is not None
    routed, shared, moe_width, dense = p.experts
    attn = d * ql + ql + ql * h * (nope + rope) + d * (r + rope) + r + r * h * (nope + vd) + h * vd * d
    mlp_dense = 3 * d * p.intermediate
    mlp_moe = (routed + shared) * 3 * d * moe_width + routed * d + routed
    layers = p.layers * (attn + 2 * d) + dense * mlp_dense + (p.layers - dense) * mlp_moe
    return 2 * p.vocab * d + d + layers


def _alternating(layers: int, window: int) -> tuple[int | None, ...]:
    # Gemma 2: even layers slide over `window` tokens, odd layers attend globally
    return tuple(window if i % 2 == 0 else None for i in range(layers))


def _every_nth_global(layers: int, window: int, n: int = 6) -> tuple[int | None, ...]:
    # Gemma 3: five local layers over `window` tokens, then one global (layer_types in its config.json)
    return tuple(None if (i + 1) % n == 0 else window for i in range(layers))


# fmt: off
_TABLE = (
    #      name, source (config.json), arch, layers, heads, kv heads, head dim, hidden, MLP, vocab, context, …
    Preset("gpt2", "openai-community/gpt2", "gpt2", 12, 12, 12, 64, 768, 3072, 50257, 1024,
        tied=True, published_params=124_439_808),
    Preset("gpt2-xl", "openai-community/gpt2-xl", "gpt2", 48, 25, 25, 64, 1600, 6400, 50257, 1024,
        tied=True, published_params=1_557_611_200),
    Preset("llama-2-7b", "meta-llama/Llama-2-7b-hf", "llama", 32, 32, 32, 128, 4096, 11008, 32000, 4096,
        published_params=6_738_415_616),
    Preset("llama-2-70b", "meta-llama/Llama-2-70b-hf", "llama", 80, 64, 8, 128, 8192, 28672, 32000, 4096,
        published_params=68_976_648_192),
    Preset("llama-3-8b", "meta-llama/Meta-Llama-3-8B", "llama", 32, 32, 8, 128, 4096, 14336, 128256, 8192,
        published_params=8_030_261_248),
    Preset("llama-3.1-8b", "meta-llama/Llama-3.1-8B", "llama", 32, 32, 8, 128, 4096, 14336, 128256, 131072,
        published_params=8_030_261_248),
    Preset("llama-3-70b", "meta-llama/Meta-Llama-3-70B", "llama", 80, 64, 8, 128, 8192, 28672, 128256, 8192,
        published_params=70_553_706_496),
    Preset("llama-3.1-70b", "meta-llama/Llama-3.1-70B", "llama", 80, 64, 8, 128, 8192, 28672, 128256, 131072,
        published_params=70_553_706_496),
    Preset("mistral-7b", "mistralai/Mistral-7B-v0.1", "llama", 32, 32, 8, 128, 4096, 14336, 32000, 32768,
        layer_windows=(4096,) * 32, published_params=7_241_732_096),
    Preset("gemma-2-9b", "google/gemma-2-9b", "gemma2", 42, 16, 8, 256, 3584, 14336, 256000, 8192,
        tied=True, layer_windows=_alternating(42, 4096), published_params=9_241_705_984),
    # published total: the tensor elements of the GGUF kvsim fetches (`kvsim models get gemma3-270m`)
    Preset("gemma-3-270m", "google/gemma-3-270m", "gemma3", 18, 4, 1, 256, 640, 2048, 262144, 32768,
        tied=True, layer_windows=_every_nth_global(18, 512), published_params=268_098_176),
    Preset("qwen2.5-0.5b", "Qwen/Qwen2.5-0.5B", "llama", 24, 14, 2, 64, 896, 4864, 151936, 32768,
        tied=True, qkv_bias=True, published_params=494_032_768),
    Preset("smollm2-135m", "HuggingFaceTB/SmolLM2-135M-Instruct", "llama", 30, 9, 3, 64, 576, 1536, 49152, 8192,
        tied=True, published_params=134_515_008),
    Preset("falcon-7b", "tiiuae/falcon-7b", "falcon", 32, 71, 1, 64, 4544, 18176, 65024, 2048,
        tied=True, published_params=6_921_720_704),
)
# latent attention (MLA) and a mixture of experts: the memory arithmetic only (`kvsim memory`, the memory dock);
# the roofline's formulas are for K/V heads and dense MLPs, so these are not in PRESETS (the roofline's list).
# head_dim = qk_nope_head_dim; published: 671B total parameters (DeepSeek-V3 technical report), main model
_LATENT_TABLE = (
    Preset("deepseek-v3", "deepseek-ai/DeepSeek-V3", "deepseek3", 61, 128, 128, 128, 7168, 18432, 129280, 163840,
        kv_lora_rank=512, qk_rope_head_dim=64, q_lora_rank=1536, v_head_dim=128, experts=(256, 1, 2048, 3)),
)
# fmt: on
PRESETS: dict[str, Preset] = {p.name: p for p in _TABLE}
LATENT_PRESETS: dict[str, Preset] = {p.name: p for p in _LATENT_TABLE}


BUNDLED = ("tiny",)  # bundled models (resources/models) that are presets too, read from their config.json


def get_preset(name: str) -> Preset:
    key = name.lower()
    if key in BUNDLED:
        return bundled_preset(key)
    if key in LATENT_PRESETS:
        return LATENT_PRESETS[key]
    if key not in PRESETS:
        raise MemoryInputError(f"unknown preset {name!r} (see `kvsim memory --list`)")
    return PRESETS[key]


def bundled_preset(name: str = "tiny") -> Preset:
    """A bundled model's shape as a preset (its config.json, read as ``--config`` reads one)."""
    from ..models.base import bundled_models_dir
    from .memory import read_hf_config

    path = bundled_models_dir() / name / "config.json"
    return replace(preset_from_hf_config(read_hf_config(str(path)), name=name), source=f"bundled model {name}")


def preset_from_model_config(cfg: ModelConfig, name: str | None = None) -> Preset:
    """The shape of a loaded model (a ``ModelConfig``: the model on screen) as a preset."""
    windows = cfg.layer_windows
    if windows is None and cfg.sliding_window is not None:
        windows = (cfg.sliding_window,) * cfg.n_layers
    return Preset(
        name=name or cfg.name,
        source="the model on screen",
        arch={"gemma3": "gemma3", "gpt2": "gpt2"}.get(cfg.family, "llama"),
        layers=cfg.n_layers,
        heads=cfg.n_heads,
        kv_heads=cfg.n_kv_heads,
        head_dim=cfg.head_dim,
        hidden=cfg.dim,
        intermediate=cfg.hidden_dim,
        vocab=cfg.vocab_size,
        context=cfg.max_seq_len,
        tied=cfg.tie_embeddings,
        qkv_bias=cfg.qkv_bias,
        layer_windows=tuple(windows) if windows else None,
        kv_lora_rank=cfg.kv_lora_rank if cfg.latent else 0,  # a latent cache: L · (r + d_R) a token
        qk_rope_head_dim=cfg.qk_rope_head_dim if cfg.latent else 0,
    )


def kv_variants(p: Preset) -> list[Preset]:
    """The same model with MHA (H_kv = H), its own grouping and MQA (H_kv = 1): what GQA/MQA save. A latent
    cache (MLA): the same model as MHA — 2 · n_h · d_h · L a token, DeepSeek-V2's own comparison (its Table 1) — then its own."""
    if p.latent is not None:
        as_mha = replace(p, name=f"{p.name} as MHA", kv_lora_rank=0, qk_rope_head_dim=0)
        return [as_mha, p]
    out = [replace(p, name=f"{p.name} as MHA", kv_heads=p.heads)] if p.kv_heads != p.heads else []
    out.append(p)
    if p.kv_heads != 1:
        out.append(replace(p, name=f"{p.name} as MQA", kv_heads=1))
    return out


def kind_of(p: Preset) -> str:
    """MHA (one K/V head per query head), MQA (one K/V head) or GQA (groups of query heads share one)."""
    if p.latent is not None:
        return "MLA"
    return "MHA" if p.kv_heads == p.heads else "MQA" if p.kv_heads == 1 else "GQA"


def context_warning(p: Preset, tokens: int) -> str | None:
    """A line when ``tokens`` is past the model's own maximum context, naming a preset of the same
    shape that reads that far (llama-3-70b → llama-3.1-70b); None when it fits (or is unknown)."""
    if not p.context or tokens <= p.context:
        return None
    line = f"{p.name} reads at most {p.context:,} tokens (its max_position_embeddings): {tokens:,} is past it"
    shape = (p.layers, p.heads, p.kv_heads, p.head_dim, p.hidden)
    twins = [
        o for o in PRESETS.values() if (o.layers, o.heads, o.kv_heads, o.head_dim, o.hidden) == shape and o.context >= tokens
    ]
    if twins:
        twin = min(twins, key=lambda o: o.context)
        line += f"; {twin.name} has the same shape and reads {twin.context:,}"
    return line


def outgrows_weights_at(p: Preset, dtype: str = "fp16", bits: float = 16, batch: int = 1, limit: int = 10**9) -> int | None:
    """The fewest tokens whose KV cache is at least the weights' size at ``dtype``; None when it never
    is up to ``limit`` tokens (a windowed cache stops growing)."""
    from .memory import weight_bytes

    target = weight_bytes(p.n_params, dtype)
    if p.kv_bytes(limit, batch, bits) < target:
        return None
    lo, hi = 0, limit  # kv_bytes grows with the tokens: bisect
    while lo < hi:
        mid = (lo + hi) // 2
        if p.kv_bytes(mid, batch, bits) >= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


MAX_CONFIG_LAYERS = 10_000  # past any real model; a per-layer pattern of more is a damaged file


def preset_from_hf_config(config: dict, name: str = "config") -> Preset:
    """A preset from a Hugging Face config.json (GPT-2, Llama, Mistral, Qwen2, Gemma 2, Falcon…).
    Every number is taken as written and must be a positive integer: ``2.5``, ``"2"``, ``true``,
    negative or zero sizes and windows are refused, never rounded."""

    def pick(*keys: str, default: object = None) -> object:
        for k in keys:
            if config.get(k) is not None:
                return config[k]
        if default is None:
            raise MemoryInputError(f"{name}: config.json lacks {keys[0]}")
        return default

    def positive(key: str, value: object, cap: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise MemoryInputError(f"{name}: config.json's {key} must be an integer, got {value!r}")
        if value <= 0:
            raise MemoryInputError(f"{name}: config.json's {key} must be positive, got {value}")
        if cap is not None and value > cap:
            raise MemoryInputError(f"{name}: config.json's {key} = {value} is beyond any real model (at most {cap:,})")
        return value

    def flag(key: str, default: bool) -> bool:
        value = config.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise MemoryInputError(f"{name}: config.json's {key} must be true or false, got {value!r}")
        return value

    layers = positive("num_hidden_layers", pick("num_hidden_layers", "n_layer", "num_layers"), MAX_CONFIG_LAYERS)
    heads = positive("num_attention_heads", pick("num_attention_heads", "n_head"))
    hidden = positive("hidden_size", pick("hidden_size", "n_embd", "d_model"))
    if flag("multi_query", False) and not flag("new_decoder_architecture", False):
        kv_heads = 1
    else:
        kv_heads = positive("num_key_value_heads", pick("num_key_value_heads", "num_kv_heads", default=heads))
    if config.get("head_dim") is None and hidden % heads:
        raise MemoryInputError(f"{name}: hidden_size {hidden} is not divisible by {heads} heads (give head_dim)")
    head_dim = positive("head_dim", pick("head_dim", default=hidden // heads))
    window = config.get("sliding_window")
    if flag("use_sliding_window", True) is False:
        window = None
    if window is not None:
        window = positive("sliding_window", window)
    layer_types = config.get("layer_types")
    if layer_types is not None and (not isinstance(layer_types, list) or not all(isinstance(t, str) for t in layer_types)):
        raise MemoryInputError(f"{name}: config.json's layer_types must be a list of names")
    model_type = config.get("model_type", "")
    model_type = model_type if isinstance(model_type, str) else ""
    if isinstance(layer_types, list) and len(layer_types) == layers and window:
        layer_windows = tuple(window if "sliding" in t else None for t in layer_types)
    elif model_type == "gemma2" and window:
        layer_windows = _alternating(layers, window)
    elif model_type == "gemma3_text" and window:  # configs written before layer_types: every Nth layer global
        layer_windows = _every_nth_global(
            layers, window, positive("sliding_window_pattern", pick("sliding_window_pattern", default=6))
        )
    elif window:
        layer_windows = (window,) * layers
    else:
        layer_windows = None
    arch = {"gpt2": "gpt2", "gemma2": "gemma2", "gemma3_text": "gemma3", "falcon": "falcon"}.get(model_type, "llama")
    context = pick("max_position_embeddings", "n_positions", default=0)
    if isinstance(context, bool) or not isinstance(context, int) or context < 0:
        raise MemoryInputError(f"{name}: config.json's max_position_embeddings must be a non-negative integer, got {context!r}")
    return Preset(
        name=name,
        source=name,
        arch=arch,
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        hidden=hidden,
        intermediate=positive("intermediate_size", pick("intermediate_size", "n_inner", default=4 * hidden)),
        vocab=positive("vocab_size", pick("vocab_size")),
        context=context,
        tied=flag("tie_word_embeddings", model_type == "gpt2"),
        qkv_bias=flag("attention_bias", model_type == "qwen2"),
        layer_windows=layer_windows,
    )
