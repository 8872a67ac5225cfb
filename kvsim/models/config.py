"""Model configuration: one frozen dataclass for every family, plus `random:` specs.

A `ModelConfig` is all the engine needs to build a transformer: the family decides the
block layout (GPT-2: learned positions, LayerNorm, GELU MLP, biases; Llama: RoPE, RMSNorm,
SwiGLU, GQA/MQA; Gemma 3: Llama's plus QK-norm, a norm before *and* after attention and MLP,
GeGLU, embeddings scaled by sqrt(dim), Gemma's (1 + weight) RMSNorm), the numbers decide the
shapes. Attention windows may differ per layer (``layer_windows``: Gemma 3's five local layers
of 512 tokens, then one global), each kind with its own RoPE base (``rope_theta_local``).
"""

from __future__ import annotations

import math
import operator
from dataclasses import asdict, dataclass, field, replace
from typing import Any

FAMILIES = ("gpt2", "llama", "gemma3", "mla", "qwen3_next", "deepseek_v32")
#: the families whose cache holds one latent per token and layer (``kvsim.models.attention.mla``), not K/V heads
LATENT_FAMILIES = ("mla", "deepseek_v32")
# the fields only some families use, left out of ``to_dict`` at their defaults (a trace of another family
# keeps its config unchanged)
HYBRID_FIELDS = ("attention_every", "linear_heads", "linear_value_heads", "linear_head_dim", "conv_kernel")
SHARE_FIELDS = ("kv_share",)
SPARSE_FIELDS = ("q_lora_rank", "index_heads", "index_head_dim", "index_topk")

# The largest model kvsim agrees to describe: a parameter count (a few times the largest open models)
# and per-field sizes no real checkpoint comes near. A config past them is a damaged or hostile file,
# refused before anything is allocated from its numbers.
MAX_PARAMS = 10**12
MAX_SIZES = {
    "vocab_size": 10**7,
    "n_layers": 10**4,
    "n_heads": 2**14,
    "n_kv_heads": 2**14,
    "dim": 2**20,
    "head_dim": 2**16,
    "hidden_dim": 2**22,
    "max_seq_len": 2**26,
}
# what `random:` models may allocate (fp32, 4 bytes a parameter): they are for seeing, not for size
MAX_RANDOM_PARAMS = 300_000_000


class ConfigError(ValueError):
    """A configuration that cannot describe a model (bad numbers, unknown keys)."""


@dataclass(frozen=True)
class ModelConfig:
    family: str = "llama"
    vocab_size: int = 512
    n_layers: int = 4
    n_heads: int = 8
    n_kv_heads: int = 8
    dim: int = 256
    head_dim: int = 0  # 0 means dim // n_heads
    hidden_dim: int = 0  # MLP width; 0 means 4*dim (gpt2) or the Llama 8/3 rule
    max_seq_len: int = 1024
    norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    tie_embeddings: bool = False
    qkv_bias: bool = False  # GPT-2 always has biases; Qwen2 has them on q/k/v only
    out_bias: bool = False  # Llama's attention_bias: the output projection too
    mlp_bias: bool = False  # Llama's mlp_bias: gate, up and down projections
    sliding_window: int | None = None  # Mistral-style attention window, every layer (mask only)
    # per-layer windows (None: that layer attends globally); replaces sliding_window when given
    layer_windows: tuple[int | None, ...] | None = None
    rope_theta_local: float | None = None  # RoPE base of the windowed layers (Gemma 3: 10k); None = rope_theta
    qk_norm: bool = False  # RMSNorm over each head's q and k before RoPE (Gemma 3)
    query_pre_attn_scalar: float | None = None  # scores scaled by scalar**-0.5; None = head_dim (everyone else)
    final_logit_softcap: float | None = None  # logits = c·tanh(logits / c) when set (Gemma 2; Gemma 3 has none)
    # mla (DeepSeek-V2 latent attention): the cache holds per token and layer one latent of kv_lora_rank
    # values and one RoPE key of qk_rope_head_dim shared by every head; head_dim is each head's no-RoPE
    # query/key part and its value width (models/attention/mla.py)
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    # deepseek_v32 (DeepSeek-V3.2's sparse attention, models/attention/dsa.py): MLA with the query compressed to
    # q_lora_rank values, and a lightning indexer (index_heads heads of index_head_dim) that scores every cached
    # row with its own small keys (cached beside the latents); each query attends only its index_topk best rows
    q_lora_rank: int = 0
    index_heads: int = 0
    index_head_dim: int = 0
    index_topk: int = 0
    # qwen3_next (Qwen3-Next's hybrid, models/attention/hybrid.py): every ``attention_every``-th layer is gated full
    # attention (a growing K/V), the others Gated DeltaNet linear attention (a constant-size state: a short
    # convolution's last conv_kernel - 1 inputs and one dk × dv matrix per value head)
    attention_every: int = 0
    linear_heads: int = 0  # the Gated DeltaNet's query/key heads
    linear_value_heads: int = 0  # …and value heads (a multiple of linear_heads)
    linear_head_dim: int = 0  # one width for its keys and values (Qwen3-Next: 128 each)
    conv_kernel: int = 0  # its causal depthwise convolution's width (Qwen3-Next: 4)
    # cross-layer attention (CLA, Brandon et al. 2024; models/attention/cla.py): groups of kv_share consecutive layers
    # read the K/V of the group's first layer, which alone computes and caches them (1: every layer its own)
    kv_share: int = 1
    name: str = "model"
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.family, str) or self.family not in FAMILIES:
            raise ConfigError(f"unknown model family {self.family!r} (supported: {', '.join(FAMILIES)})")
        for key in ("vocab_size", "n_layers", "n_heads", "n_kv_heads", "dim", "max_seq_len", "head_dim", "hidden_dim"):
            value = _strict_int(key, getattr(self, key))
            if value < 0 or (value == 0 and key not in ("head_dim", "hidden_dim")):
                kind = "a positive integer" if key not in ("head_dim", "hidden_dim") else "positive (or 0 for the default)"
                raise ConfigError(f"{key} must be {kind}, got {value}")
            if value > MAX_SIZES[key]:
                raise ConfigError(f"{key} = {value} is beyond any real model (at most {MAX_SIZES[key]:,})")
            object.__setattr__(self, key, value)
        for key in ("tie_embeddings", "qkv_bias", "out_bias", "mlp_bias", "qk_norm"):
            if not isinstance(getattr(self, key), bool):
                raise ConfigError(f"{key} must be true or false, got {getattr(self, key)!r}")
        for key, low in (("norm_eps", 0.0), ("rope_theta", 0.0)):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= low:
                raise ConfigError(f"{key} must be a positive finite number, got {value!r}")
            object.__setattr__(self, key, float(value))
        for key in ("rope_theta_local", "query_pre_attn_scalar", "final_logit_softcap"):  # optional, positive
            value = getattr(self, key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise ConfigError(f"{key} must be a positive finite number (or none), got {value!r}")
            object.__setattr__(self, key, float(value))
        if self.norm_eps >= 1:
            raise ConfigError(f"norm_eps must be below 1, got {self.norm_eps}")
        if self.n_heads % self.n_kv_heads:
            raise ConfigError(f"heads ({self.n_heads}) must be a multiple of kv_heads ({self.n_kv_heads})")
        if self.head_dim == 0:
            if self.dim % self.n_heads:
                raise ConfigError(f"dim ({self.dim}) must be divisible by heads ({self.n_heads})")
            object.__setattr__(self, "head_dim", self.dim // self.n_heads)
        if self.family != "gpt2" and self.head_dim % 2:
            raise ConfigError(f"RoPE needs an even head dimension, got {self.head_dim}")
        if self.hidden_dim == 0:
            if self.family == "gpt2":
                hidden = 4 * self.dim
            else:
                hidden = int(2 * (4 * self.dim) / 3)
                hidden = 32 * ((hidden + 31) // 32)
            object.__setattr__(self, "hidden_dim", hidden)
        if self.family == "gpt2" and self.n_kv_heads != self.n_heads:
            raise ConfigError("GPT-2 family models use multi-head attention: kv_heads must equal heads")
        if self.family == "gpt2" and (self.qk_norm or self.rope_theta_local is not None):
            raise ConfigError("GPT-2 family models have learned positions and no QK-norm")
        if self.family in LATENT_FAMILIES:
            self._check_mla()
        elif self.kv_lora_rank or self.qk_rope_head_dim:
            raise ConfigError("kv_lora_rank and qk_rope_head_dim are for family=mla or deepseek_v32")
        if self.family == "deepseek_v32":
            self._check_sparse()
        elif any(getattr(self, key) for key in SPARSE_FIELDS):
            raise ConfigError("q_lora_rank and the index_* settings are for family=deepseek_v32")
        if self.family == "qwen3_next":
            self._check_hybrid()
        elif any(getattr(self, key) for key in HYBRID_FIELDS):
            raise ConfigError("attention_every and the linear_* settings are for family=qwen3_next")
        self._check_share()
        if self.sliding_window is not None:
            window = _strict_int("sliding_window", self.sliding_window)
            if window <= 0:
                raise ConfigError(f"sliding window must be positive, got {window}")
            object.__setattr__(self, "sliding_window", window)
        if self.layer_windows is not None:
            self._check_layer_windows()
        if self.n_params() > MAX_PARAMS:
            raise ConfigError(f"the shape describes {self.n_params():,} parameters, beyond any real model")

    def _check_layer_windows(self) -> None:
        windows = self.layer_windows
        if isinstance(windows, list):  # what a JSON round trip (a saved trace) gives back
            windows = tuple(windows)
        if not isinstance(windows, tuple):
            raise ConfigError(f"layer_windows must be a list of windows (or none), got {str(windows)[:60]!r}")
        if len(windows) != self.n_layers:
            raise ConfigError(f"layer_windows has {len(windows)} entries for {self.n_layers} layers")
        if self.sliding_window is not None:
            raise ConfigError("give either sliding_window (every layer) or layer_windows (per layer), not both")
        checked = []
        for i, w in enumerate(windows):
            if w is not None:
                w = _strict_int(f"layer_windows[{i}]", w)
                if w <= 0:
                    raise ConfigError(f"layer_windows[{i}] must be a positive window (or none), got {w}")
            checked.append(w)
        object.__setattr__(self, "layer_windows", tuple(checked))

    def _check_hybrid(self) -> None:
        for key in HYBRID_FIELDS:
            value = _strict_int(key, getattr(self, key))
            if not 0 < value <= 2**14:
                raise ConfigError(f"{key} must be a positive integer for family=qwen3_next, got {value}")
            object.__setattr__(self, key, value)
        if self.linear_value_heads % self.linear_heads:
            raise ConfigError(
                f"linear_value_heads ({self.linear_value_heads}) must be a multiple of linear_heads ({self.linear_heads})"
            )
        if self.head_dim % 8:  # a quarter of each head is rotated (partial RoPE), and that quarter must be even
            raise ConfigError(
                f"family=qwen3_next rotates a quarter of each head: head_dim must be a multiple of 8, got {self.head_dim}"
            )
        if self.sliding_window is not None or self.layer_windows is not None:
            raise ConfigError("family=qwen3_next has no attention windows")

    def _check_share(self) -> None:
        share = _strict_int("kv_share", self.kv_share)
        if not 1 <= share <= self.n_layers:
            raise ConfigError(f"kv_share must be from 1 to the number of layers ({self.n_layers}), got {share}")
        object.__setattr__(self, "kv_share", share)
        if share > 1 and self.family not in ("llama", "gpt2"):
            raise ConfigError("cross-layer KV sharing (cla) is for family=llama or gpt2")

    @property
    def linear_layers(self) -> tuple[int, ...]:
        """The layers that hold a recurrent state instead of K/V rows (qwen3_next's Gated DeltaNet layers)."""
        if self.family != "qwen3_next":
            return ()
        return tuple(i for i in range(self.n_layers) if (i + 1) % self.attention_every)

    def kv_owner(self, layer: int) -> int:
        """The layer whose K/V ``layer`` reads: itself, or its CLA group's first layer."""
        return layer - layer % self.kv_share

    @property
    def kv_layers(self) -> tuple[int, ...]:
        """The layers that compute and cache K/V rows: every layer but the recurrent ones and the CLA borrowers."""
        linear = set(self.linear_layers)
        return tuple(i for i in range(self.n_layers) if i not in linear and self.kv_owner(i) == i)

    def recurrent_state_values(self) -> tuple[int, int]:
        """(conv values, recurrent values) one Gated DeltaNet layer holds per sequence: the convolution's last
        conv_kernel - 1 inputs of its q, k and v channels, and one dk × dv matrix per value head."""
        if self.family != "qwen3_next":
            return 0, 0
        dk = self.linear_head_dim
        channels = 2 * self.linear_heads * dk + self.linear_value_heads * dk
        return channels * (self.conv_kernel - 1), self.linear_value_heads * dk * dk

    def _check_mla(self) -> None:
        for key in ("kv_lora_rank", "qk_rope_head_dim"):
            value = _strict_int(key, getattr(self, key))
            if not 0 < value <= 2**16:
                raise ConfigError(f"{key} must be a positive integer for family={self.family}, got {value}")
            object.__setattr__(self, key, value)
        if self.qk_rope_head_dim % 2:
            raise ConfigError(f"RoPE needs an even qk_rope_head_dim, got {self.qk_rope_head_dim}")
        if self.n_kv_heads != 1:
            raise ConfigError(f"family={self.family} caches one latent per token (kv_heads=1), not K/V heads")
        if self.qk_norm or self.sliding_window is not None or self.layer_windows is not None:
            raise ConfigError(f"family={self.family} has no QK-norm and no attention windows")
        if self.query_pre_attn_scalar is None:  # scores scaled by (no-RoPE + RoPE dims)**-0.5, as DeepSeek-V2
            object.__setattr__(self, "query_pre_attn_scalar", float(self.head_dim + self.qk_rope_head_dim))

    def _check_sparse(self) -> None:
        for key in SPARSE_FIELDS:
            value = _strict_int(key, getattr(self, key))
            if not 0 < value <= 2**16:
                raise ConfigError(f"{key} must be a positive integer for family=deepseek_v32, got {value}")
            object.__setattr__(self, key, value)
        if self.index_head_dim < self.qk_rope_head_dim:
            raise ConfigError(
                f"the indexer rotates its first {self.qk_rope_head_dim} dims (qk_rope_head_dim): "
                f"index_head_dim must be at least that, got {self.index_head_dim}"
            )

    @property
    def latent(self) -> bool:
        """True when the cache holds one latent per token and layer (MLA, DeepSeek-V3.2's sparse MLA)."""
        return self.family in LATENT_FAMILIES

    @property
    def rope_head_dim(self) -> int:
        """The dimensions RoPE rotates in a query or key: the whole head, or MLA's decoupled RoPE part."""
        if self.family == "qwen3_next":  # Qwen3-Next's partial_rotary_factor 0.25
            return self.head_dim // 4
        return self.qk_rope_head_dim if self.latent else self.head_dim

    @property
    def row_width(self) -> int:
        """Values in one recorded K, V or Q row: ``head_dim``; on mla the cached latent and its RoPE key,
        r + d_R (one row per token and layer, shared by every head; the queries recorded in that space)."""
        return self.kv_lora_rank + self.qk_rope_head_dim if self.latent else self.head_dim

    def window_of(self, layer: int) -> int | None:
        """The attention window of ``layer`` (None: it sees every earlier position)."""
        return self.layer_windows[layer] if self.layer_windows is not None else self.sliding_window

    def rope_theta_of(self, layer: int) -> float:
        """The RoPE base of ``layer``: Gemma 3's windowed (local) layers rotate with their own base."""
        if self.rope_theta_local is not None and self.window_of(layer) is not None:
            return self.rope_theta_local
        return self.rope_theta

    def n_params(self) -> int:
        """Parameters of a model of this shape (tied embeddings once), by arithmetic: nothing is built."""
        d, h, hkv, hd, ff = self.dim, self.n_heads, self.n_kv_heads, self.head_dim, self.hidden_dim
        gpt2 = self.family == "gpt2"
        attn = d * (h + 2 * hkv) * hd + h * hd * d
        attn += (h + 2 * hkv) * hd if gpt2 or self.qkv_bias else 0
        attn += d if gpt2 or self.out_bias else 0
        attn += 2 * hd if self.qk_norm else 0  # one weight per head dim for q, one for k (shared by heads)
        mlp = (2 * d * ff + ff + d) if gpt2 else 3 * d * ff + ((2 * ff + d) if self.mlp_bias else 0)
        norms = (4 if gpt2 or self.family == "gemma3" else 2) * d  # Gemma 3: pre- and post-norms
        top = self.vocab_size * d * (1 if self.tie_embeddings else 2) + (2 if gpt2 else 1) * d
        top += self.max_seq_len * d if gpt2 else 0
        if self.family == "mla":  # wq, wkv_a (latent + RoPE key), the latent's norm, wkv_b (up to K and V), wo
            r, dr = self.kv_lora_rank, self.qk_rope_head_dim
            attn = d * h * (hd + dr) + d * (r + dr) + r + r * h * 2 * hd + h * hd * d
        if self.family == "deepseek_v32":  # the query through q_lora_rank (wq_a, its norm, wq_b), and the indexer
            r, dr, qr = self.kv_lora_rank, self.qk_rope_head_dim, self.q_lora_rank
            hi, di = self.index_heads, self.index_head_dim
            query = d * qr + qr + qr * h * (hd + dr)
            indexer = qr * hi * di + d * di + 2 * di + d * hi  # wq_b, wk, k_norm (weight and bias), weights_proj
            attn = query + d * (r + dr) + r + r * h * 2 * hd + h * hd * d + indexer
        if self.family == "qwen3_next":  # gated attention (a gate per query value) and Gated DeltaNet layers
            attn = d * (2 * h + 2 * hkv) * hd + h * hd * d + 2 * hd
            hk, hv, dk = self.linear_heads, self.linear_value_heads, self.linear_head_dim
            channels = (2 * hk + hv) * dk  # the convolution's q, k and v channels
            # in_proj_qkvz, in_proj_ba, conv1d, dt_bias + A_log, the gated norm, out_proj
            linear = d * (2 * hk + 2 * hv) * dk + d * 2 * hv + channels * self.conv_kernel + 2 * hv + dk + hv * dk * d
            n_linear = len(self.linear_layers)
            return top + n_linear * (linear + mlp + norms) + (self.n_layers - n_linear) * (attn + mlp + norms)
        # a CLA borrower has no K/V projections
        borrowers = self.n_layers - len(self.kv_layers) if self.kv_share > 1 else 0
        kv_proj = 2 * d * hkv * hd + (2 * hkv * hd if gpt2 or self.qkv_bias else 0)
        return top + self.n_layers * (attn + mlp + norms) - borrowers * kv_proj

    @property
    def group_size(self) -> int:
        """Query heads that share one K/V head (1 = MHA, n_heads = MQA)."""
        return self.n_heads // self.n_kv_heads

    def to_dict(self) -> dict[str, Any]:
        """The shape numbers as plain JSON values (what traces and the app carry)."""
        out = {k: v for k, v in asdict(self).items() if k != "extra"}
        if self.family != "qwen3_next":
            for key in HYBRID_FIELDS:
                del out[key]
        if self.kv_share == 1:
            del out["kv_share"]
        if self.family != "deepseek_v32":
            for key in SPARSE_FIELDS:
                del out[key]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})

    def with_(self, **changes: Any) -> ModelConfig:
        return replace(self, **changes)


# `random:` spec keys → ModelConfig fields. Short names are what people type.
_RANDOM_KEYS = {
    "family": "family",
    "layers": "n_layers",
    "heads": "n_heads",
    "kv_heads": "n_kv_heads",
    "dim": "dim",
    "head_dim": "head_dim",
    "hidden": "hidden_dim",
    "vocab": "vocab_size",
    "ctx": "max_seq_len",
    "context": "max_seq_len",
    "window": "sliding_window",
    "tie": "tie_embeddings",
    "qkv_bias": "qkv_bias",
    "out_bias": "out_bias",
    "mlp_bias": "mlp_bias",
    "rope_theta": "rope_theta",
    "rope_theta_local": "rope_theta_local",
    "global_every": "global_every",  # gemma3: every Nth layer attends globally, the others over `window`
    "latent": "kv_lora_rank",  # mla: the latent's width
    "rope_dim": "qk_rope_head_dim",  # mla: the decoupled RoPE key's width
    "attention_every": "attention_every",  # qwen3_next: every Nth layer full attention, the others Gated DeltaNet
    "linear_heads": "linear_heads",  # qwen3_next: the Gated DeltaNet's query/key heads…
    "linear_value_heads": "linear_value_heads",  # …its value heads…
    "linear_head_dim": "linear_head_dim",  # …their width
    "conv": "conv_kernel",  # qwen3_next: the short convolution's width
    "cla": "kv_share",  # cross-layer attention: groups of N layers read their first layer's K/V
    "q_lora": "q_lora_rank",  # deepseek_v32: the compressed query's width
    "index_heads": "index_heads",  # deepseek_v32: the lightning indexer's heads…
    "index_dim": "index_head_dim",  # …and the width of its keys (cached beside each latent)
    "topk": "index_topk",  # deepseek_v32: the rows each query attends
}


def parse_random_spec(spec: str) -> tuple[ModelConfig, int]:
    """Parse ``random:family=llama,layers=4,heads=8,kv_heads=2,dim=256,seed=0``.

    Returns the config and the weight seed. Defaults give a small Llama with GQA. ``family=gemma3``
    gives Gemma 3's block (QK-norm, four norms, GeGLU); with ``window=W`` its layers slide over W
    tokens except every ``global_every``-th (default 6), as Gemma 3's do.
    """
    body = spec.split(":", 1)[1] if spec.startswith("random") and ":" in spec else ""
    if spec not in ("random", "random:") and not spec.startswith("random:"):
        raise ConfigError(f"not a random: model spec: {spec!r}")
    values: dict[str, Any] = {
        "family": "llama",
        "n_layers": 4,
        "n_heads": 8,
        "n_kv_heads": 2,
        "dim": 256,
        "vocab_size": 512,
        "max_seq_len": 1024,
    }
    seed = 0
    kv_given = False
    for item in filter(None, (part.strip() for part in body.split(","))):
        if "=" not in item:
            raise ConfigError(f"malformed random: setting {item!r}: expected key=value")
        key, raw = (s.strip() for s in item.split("=", 1))
        if key == "seed":
            seed = _to_int(key, raw)
            continue
        if key not in _RANDOM_KEYS:
            raise ConfigError(f"unknown random: setting {key!r} (known: seed, {', '.join(_RANDOM_KEYS)})")
        field_name = _RANDOM_KEYS[key]
        if field_name == "family":
            values[field_name] = raw
        elif field_name in ("tie_embeddings", "qkv_bias", "out_bias", "mlp_bias"):
            if raw.lower() not in ("0", "1", "true", "false", "yes", "no"):
                raise ConfigError(f"random: setting {key} must be true or false, got {raw!r}")
            values[field_name] = raw.lower() in ("1", "true", "yes")
        elif field_name in ("rope_theta", "rope_theta_local"):
            try:
                values[field_name] = float(raw)
            except ValueError as exc:
                raise ConfigError(f"random: setting {key} must be a number, got {raw!r}") from exc
            if not math.isfinite(values[field_name]):
                raise ConfigError(f"random: setting {key} must be a finite number, got {raw!r}")
        else:
            values[field_name] = _to_int(key, raw)
            kv_given |= field_name == "n_kv_heads"
    if values["family"] == "gpt2" and not kv_given:
        values["n_kv_heads"] = values["n_heads"]
    if values["family"] == "gpt2":
        values["qkv_bias"] = True
    if values["family"] in LATENT_FAMILIES:  # one latent per token; DeepSeek-V2's proportions by default (r = 4·d, RoPE d/2)
        values["n_kv_heads"] = 1 if not kv_given else values["n_kv_heads"]
        head_dim = values.get("head_dim") or values["dim"] // values["n_heads"]
        values.setdefault("kv_lora_rank", 4 * head_dim)
        values.setdefault("qk_rope_head_dim", max(2, head_dim // 2))
    if values["family"] == "deepseek_v32":  # DeepSeek-V3.2's proportions: q_lora ≈ dim / 4, an indexer of half the
        head_dim = values.get("head_dim") or values["dim"] // values["n_heads"]  # heads, each head_dim wide
        values.setdefault("q_lora_rank", max(8, values["dim"] // 4))
        values.setdefault("index_heads", max(1, values["n_heads"] // 2))
        values.setdefault("index_head_dim", max(head_dim, values["qk_rope_head_dim"]))
        values.setdefault("index_topk", 16)  # V3.2 reads 2,048 rows; 16 shows the sparsity on a short prompt
        values.setdefault("norm_eps", 1e-6)
    if values["family"] == "qwen3_next":  # Qwen3-Next's proportions: 3 Gated DeltaNet layers to 1 attention
        head_dim = values.get("head_dim") or values["dim"] // values["n_heads"]
        values.setdefault("attention_every", 4)
        values.setdefault("linear_heads", max(1, values["n_heads"] // 2))
        values.setdefault("linear_value_heads", values["n_heads"])
        values.setdefault("linear_head_dim", head_dim)
        values.setdefault("conv_kernel", 4)
        values.setdefault("norm_eps", 1e-6)
        values["qk_norm"] = True  # its attention layers normalise each head's q and k, as Gemma 3's
    every = values.pop("global_every", None)
    if values["family"] == "gemma3":
        values["qk_norm"] = True
        window = values.pop("sliding_window", None)
        if window is not None:
            every = 6 if every is None else every
            if every < 1:
                raise ConfigError(f"random: setting global_every must be at least 1, got {every}")
            values["layer_windows"] = tuple(None if (i + 1) % every == 0 else window for i in range(values["n_layers"]))
            values.setdefault("rope_theta_local", 10000.0)
    elif every is not None or "rope_theta_local" in values:
        raise ConfigError("random: settings global_every and rope_theta_local are for family=gemma3")
    values["name"] = spec
    cfg = ModelConfig(**values)
    if cfg.n_params() > MAX_RANDOM_PARAMS:
        raise ConfigError(
            f"random: a model of {cfg.n_params():,} parameters ({cfg.n_params() * 4 / 1e9:.1f} GB) is "
            f"more than random: models allow ({MAX_RANDOM_PARAMS:,}); load a checkpoint for big models"
        )
    if not 0 <= seed < 2**63:
        raise ConfigError(f"random: seed must be from 0 to 2^63-1, got {seed}")
    return cfg, seed


def _to_int(key: str, raw: str) -> int:
    # digits only: int() would also take "1_000", " 7 " and 4,300-digit numbers it is slow to parse
    text = raw.strip()
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isascii() or not digits.isdigit() or len(digits) > 30:
        raise ConfigError(f"random: setting {key} must be an integer, got {raw!r}")
    return int(text)


def _strict_int(key: str, value: Any) -> int:
    """``value`` as an int when it is one (numpy integers included); bools, floats and strings are refused:
    a config that says ``2.5``, ``"2"`` or ``true`` layers is damaged, not something to round."""
    if isinstance(value, bool) or isinstance(value, float | str | bytes):
        raise ConfigError(f"{key} must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise ConfigError(f"{key} must be an integer, got {value!r}") from None
