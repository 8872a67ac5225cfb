"""Model configuration: one frozen dataclass for every family, plus `random:` specs.

A `ModelConfig` is all the engine needs to build a transformer: the family decides the
block layout (GPT-2: learned positions, LayerNorm, GELU MLP, biases; Llama: RoPE, RMSNorm,
SwiGLU, GQA/MQA), the numbers decide the shapes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

FAMILIES = ("gpt2", "llama")


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
    sliding_window: int | None = None  # Mistral-style attention window (mask only)
    name: str = "model"
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ConfigError(f"unknown model family {self.family!r} (supported: {', '.join(FAMILIES)})")
        for key in ("vocab_size", "n_layers", "n_heads", "n_kv_heads", "dim", "max_seq_len"):
            if int(getattr(self, key)) <= 0:
                raise ConfigError(f"{key} must be a positive integer, got {getattr(self, key)}")
        if self.n_heads % self.n_kv_heads:
            raise ConfigError(f"heads ({self.n_heads}) must be a multiple of kv_heads ({self.n_kv_heads})")
        if self.head_dim < 0 or self.hidden_dim < 0:
            raise ConfigError("head_dim and hidden must be positive (or 0 for the default)")
        if not self.rope_theta > 0:
            raise ConfigError(f"rope_theta must be positive, got {self.rope_theta}")
        if self.head_dim == 0:
            if self.dim % self.n_heads:
                raise ConfigError(f"dim ({self.dim}) must be divisible by heads ({self.n_heads})")
            object.__setattr__(self, "head_dim", self.dim // self.n_heads)
        if self.family == "llama" and self.head_dim % 2:
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
        if self.sliding_window is not None and self.sliding_window <= 0:
            raise ConfigError(f"sliding window must be positive, got {self.sliding_window}")

    @property
    def group_size(self) -> int:
        """Query heads that share one K/V head (1 = MHA, n_heads = MQA)."""
        return self.n_heads // self.n_kv_heads

    def to_dict(self) -> dict[str, Any]:
        """The shape numbers as plain JSON values (what traces and the app carry)."""
        return {k: v for k, v in asdict(self).items() if k != "extra"}

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
    "rope_theta": "rope_theta",
}


def parse_random_spec(spec: str) -> tuple[ModelConfig, int]:
    """Parse ``random:family=llama,layers=4,heads=8,kv_heads=2,dim=256,seed=0``.

    Returns the config and the weight seed. Defaults give a small Llama with GQA.
    """
    body = spec.split(":", 1)[1] if spec.startswith("random") and ":" in spec else ""
    if spec not in ("random", "random:") and not spec.startswith("random:"):
        raise ConfigError(f"not a random: model spec: {spec!r}")
    values: dict[str, Any] = {"family": "llama", "n_layers": 4, "n_heads": 8, "n_kv_heads": 2, "dim": 256,
                              "vocab_size": 512, "max_seq_len": 1024}
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
        elif field_name in ("tie_embeddings", "qkv_bias"):
            if raw.lower() not in ("0", "1", "true", "false", "yes", "no"):
                raise ConfigError(f"random: setting {key} must be true or false, got {raw!r}")
            values[field_name] = raw.lower() in ("1", "true", "yes")
        elif field_name == "rope_theta":
            try:
                values[field_name] = float(raw)
            except ValueError as exc:
                raise ConfigError(f"random: setting {key} must be a number, got {raw!r}") from exc
        else:
            values[field_name] = _to_int(key, raw)
            kv_given |= field_name == "n_kv_heads"
    if values["family"] == "gpt2" and not kv_given:
        values["n_kv_heads"] = values["n_heads"]
    if values["family"] == "gpt2":
        values["qkv_bias"] = True
    values["name"] = spec
    return ModelConfig(**values), seed


def _to_int(key: str, raw: str) -> int:
    try:
        return int(raw)
    except ValueError as exc:
        raise ConfigError(f"random: setting {key} must be an integer, got {raw!r}") from exc
