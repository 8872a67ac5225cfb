"""Hugging Face checkpoint directories → kvsim's Transformer.

Reads ``config.json`` (through ``hf_config``), every ``*.safetensors`` file (never pickle) and ``tokenizer.json``, maps the
tensor names of the GPT-2, Llama (Llama, Mistral, Qwen2, SmolLM) and Gemma 3 (``gemma3_text``)
families onto kvsim's modules, and refuses anything else with a message that names what is supported.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

from .base import LoadedModel, ModelLoadError
from .config import ModelConfig
from .hf_config import config_from_hf, hf_tensor_shapes
from .tensors import check_finite, check_size, check_tensor_set
from .tokenizer import TextTokenizer, check_vocabulary
from .transformer import Transformer


def _gpt2_state(w: dict[str, torch.Tensor], cfg: ModelConfig) -> dict[str, torch.Tensor]:
    w = {k.removeprefix("transformer."): v for k, v in w.items()}
    d = cfg.dim
    out = {
        "tok_embeddings.weight": w["wte.weight"],
        "pos_embeddings.weight": w["wpe.weight"],
        "norm.weight": w["ln_f.weight"],
        "norm.bias": w["ln_f.bias"],
    }
    if not cfg.tie_embeddings:
        out["lm_head.weight"] = w["lm_head.weight"]
    for i in range(cfg.n_layers):
        p, o = f"h.{i}.", f"layers.{i}."
        # GPT-2 stores Conv1D weights as (in, out): transpose to Linear's (out, in)
        qkv_w, qkv_b = w[p + "attn.c_attn.weight"].t(), w[p + "attn.c_attn.bias"]
        for j, name in enumerate(("wq", "wk", "wv")):
            out[o + f"attn.{name}.weight"] = qkv_w[j * d : (j + 1) * d]
            out[o + f"attn.{name}.bias"] = qkv_b[j * d : (j + 1) * d]
        out[o + "attn.wo.weight"] = w[p + "attn.c_proj.weight"].t()
        out[o + "attn.wo.bias"] = w[p + "attn.c_proj.bias"]
        out[o + "mlp.fc.weight"] = w[p + "mlp.c_fc.weight"].t()
        out[o + "mlp.fc.bias"] = w[p + "mlp.c_fc.bias"]
        out[o + "mlp.proj.weight"] = w[p + "mlp.c_proj.weight"].t()
        out[o + "mlp.proj.bias"] = w[p + "mlp.c_proj.bias"]
        for src, dst in (("ln_1", "attn_norm"), ("ln_2", "mlp_norm")):
            out[o + f"{dst}.weight"] = w[p + f"{src}.weight"]
            out[o + f"{dst}.bias"] = w[p + f"{src}.bias"]
    return out


def _llama_state(w: dict[str, torch.Tensor], cfg: ModelConfig) -> dict[str, torch.Tensor]:
    out = {"tok_embeddings.weight": w["model.embed_tokens.weight"], "norm.weight": w["model.norm.weight"]}
    if not cfg.tie_embeddings:
        out["lm_head.weight"] = w["lm_head.weight"]
    names = {
        "self_attn.q_proj": "attn.wq",
        "self_attn.k_proj": "attn.wk",
        "self_attn.v_proj": "attn.wv",
        "self_attn.o_proj": "attn.wo",
        "mlp.gate_proj": "mlp.w_gate",
        "mlp.up_proj": "mlp.w_up",
        "mlp.down_proj": "mlp.w_down",
        "input_layernorm": "attn_norm",
        "post_attention_layernorm": "mlp_norm",
    }
    if cfg.family == "gemma3":  # same names, other places: Gemma's post_attention_layernorm follows attention
        names.update(
            {
                "post_attention_layernorm": "post_attn_norm",
                "pre_feedforward_layernorm": "mlp_norm",
                "post_feedforward_layernorm": "post_mlp_norm",
            }
        )
    if cfg.qk_norm:
        names.update({"self_attn.q_norm": "attn.q_norm", "self_attn.k_norm": "attn.k_norm"})
    biased = {
        "self_attn.q_proj": cfg.qkv_bias,
        "self_attn.k_proj": cfg.qkv_bias,
        "self_attn.v_proj": cfg.qkv_bias,
        "self_attn.o_proj": cfg.out_bias,
        "mlp.gate_proj": cfg.mlp_bias,
        "mlp.up_proj": cfg.mlp_bias,
        "mlp.down_proj": cfg.mlp_bias,
    }
    for i in range(cfg.n_layers):
        for src, dst in names.items():
            out[f"layers.{i}.{dst}.weight"] = w[f"model.layers.{i}.{src}.weight"]
            if biased.get(src):
                out[f"layers.{i}.{dst}.bias"] = w[f"model.layers.{i}.{src}.bias"]
    return out


_INITS = ("normal_", "uniform_", "trunc_normal_", "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_", "xavier_normal_")


@contextlib.contextmanager
def _no_random_init() -> Iterator[None]:
    """Skip the random init of meta tensors (the weights overwrite it): on the meta device ``normal_``
    imports ``torch._dynamo`` (~1.2 s of a 2 MB model's launch); as transformers' ``no_init_weights`` does."""
    saved = {name: getattr(torch.nn.init, name) for name in _INITS}

    def skipping(original: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
        return lambda tensor, *args, **kwargs: tensor if tensor.is_meta else original(tensor, *args, **kwargs)

    for name, original in saved.items():
        setattr(torch.nn.init, name, skipping(original))
    try:
        yield
    finally:
        for name, original in saved.items():
            setattr(torch.nn.init, name, original)


def build_with_weights(cfg: ModelConfig, state: dict[str, torch.Tensor]) -> Transformer:
    """A ``Transformer`` holding exactly ``state`` (strict: every tensor, right shapes), built on the
    meta device so no time goes into a random init the weights overwrite; tied embeddings stay one tensor."""
    with torch.device("meta"), _no_random_init():
        model = Transformer(cfg)
    model.load_state_dict(state, strict=True, assign=True)
    if cfg.tie_embeddings:
        model.lm_head.weight = model.tok_embeddings.weight
    return model


_FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")


def _read_index(path: Path, files: list[Path], model_id: str) -> dict[str, tuple[Path, str, tuple[int, ...]]]:
    """name → (file, dtype, shape) from the safetensors headers alone (no tensor data is read)."""
    from safetensors import SafetensorError, safe_open

    index: dict[str, tuple[Path, str, tuple[int, ...]]] = {}
    for f in files:
        if not f.is_file():
            raise ModelLoadError(f"{f}: not a regular file")
        try:
            with safe_open(str(f), framework="pt") as fh:
                for key in fh.keys():
                    if key in index:
                        raise ModelLoadError(f"{model_id}: tensor {key!r} is in both {index[key][0].name} and {f.name}")
                    part = fh.get_slice(key)
                    index[key] = (f, part.get_dtype(), tuple(int(n) for n in part.get_shape()))
        except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
            if isinstance(exc, ModelLoadError):
                raise
            raise ModelLoadError(
                f"{f}: weights cannot be read, the file may be corrupt "
                f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
            ) from exc
    return index


def _derived_buffers(cfg: ModelConfig, index: dict, prefix: str) -> set[str]:
    """Names of buffers some checkpoints save although the config determines them (GPT-2's causal
    mask ``attn.bias``/``attn.masked_bias``, old Llama's ``rotary_emb.inv_freq``): kvsim recomputes
    them, and the loader checks the saved ones agree."""
    names = set()
    for i in range(cfg.n_layers):
        if cfg.family == "gpt2":
            names |= {f"{prefix}h.{i}.attn.bias", f"{prefix}h.{i}.attn.masked_bias"}
        else:
            names.add(f"model.layers.{i}.self_attn.rotary_emb.inv_freq")
    return names & set(index)


def load_hf_dir(path: Path, model_id: str) -> LoadedModel:
    from safetensors import SafetensorError, safe_open

    config_file = path / "config.json"
    if not config_file.is_file():
        raise ModelLoadError(f"{config_file}: not a regular file")
    try:
        if config_file.stat().st_size > 4_000_000:  # real ones are a few kB
            raise ModelLoadError(f"{config_file} is {config_file.stat().st_size:,} bytes: not a config.json")
        hf = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: bad JSON, bad UTF-8, a 5,000-digit number
        raise ModelLoadError(
            f"{path}/config.json cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
        ) from exc
    cfg = config_from_hf(hf, model_id)
    files = sorted(path.glob("*.safetensors"))
    if not files:
        bins = list(path.glob("*.bin")) + list(path.glob("*.pt"))
        extra = " (pickle .bin/.pt weights are never loaded: convert them to safetensors)" if bins else ""
        raise ModelLoadError(f"{path}: no *.safetensors weights{extra}")
    index = _read_index(path, files, model_id)
    prefix = "transformer." if cfg.family == "gpt2" and any(k.startswith("transformer.") for k in index) else ""
    found = {k: shape for k, (_, _, shape) in index.items()}
    tied_head = cfg.tie_embeddings and "lm_head.weight" in index  # a copy of the embeddings, checked below
    check_size(model_id, cfg.n_params(), found, "config.json")
    expected = hf_tensor_shapes(cfg, prefix)
    derived = _derived_buffers(cfg, index, prefix)
    check_tensor_set(
        model_id, expected, found, ignorable=derived | ({"lm_head.weight"} if tied_head else set()), what="config.json"
    )
    for key in expected:
        if index[key][1] not in _FLOAT_DTYPES:
            raise ModelLoadError(
                f"{model_id}: tensor {key!r} is {index[key][1]}, not floating point (quantized checkpoints are not supported)"
            )
    weights: dict[str, torch.Tensor] = {}
    try:
        for f in files:
            with safe_open(str(f), framework="pt") as fh:
                for key in fh.keys():
                    if key in expected or key in derived or (tied_head and key == "lm_head.weight"):
                        weights[key] = fh.get_tensor(key)
    except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
        raise ModelLoadError(
            f"{path}: weights cannot be read, the file may be corrupt "
            f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
        ) from exc
    for key in expected:
        check_finite(model_id, key, weights[key])
    _check_derived(model_id, cfg, weights, derived, tied_head, prefix)
    state = (_gpt2_state if cfg.family == "gpt2" else _llama_state)(weights, cfg)
    state = {k: v.to(torch.float32).contiguous() for k, v in state.items()}
    if cfg.tie_embeddings:
        state["lm_head.weight"] = state["tok_embeddings.weight"]
    try:
        model = build_with_weights(cfg, state)
    except RuntimeError as exc:
        raise ModelLoadError(f"{path}: weights do not fit config.json ({str(exc).splitlines()[0]})") from exc
    tok_file = path / "tokenizer.json"
    if not tok_file.is_file():
        raise ModelLoadError(f"{path}: tokenizer.json is missing (or not a regular file)")
    warned: list[str] = []
    tokenizer = TextTokenizer.from_file(
        tok_file,
        eos_id=_token_id(hf, "eos_token_id", cfg, model_id, warned),
        bos_id=_token_id(hf, "bos_token_id", cfg, model_id, warned),
    )
    check_vocabulary(tokenizer, cfg.vocab_size, model_id)
    tokenizer.chat_template = _chat_template(path)
    info: dict[str, object] = {"source": str(path), "format": "hf"}
    if warned:
        info["warnings"] = warned
    return LoadedModel(model.eval(), tokenizer, model_id, info)


def _check_derived(
    model_id: str, cfg: ModelConfig, weights: dict[str, torch.Tensor], derived: set[str], tied_head: bool, prefix: str
) -> None:
    """The tensors kvsim does not load but recomputes or shares must say what kvsim assumes."""
    if tied_head:
        embed = weights[prefix + "wte.weight" if cfg.family == "gpt2" else "model.embed_tokens.weight"]
        head = weights["lm_head.weight"]
        if head.shape != embed.shape or not torch.equal(head.to(torch.float32), embed.to(torch.float32)):
            raise ModelLoadError(
                f"{model_id}: config.json ties the output head to the embeddings but "
                "'lm_head.weight' in the weights differs from them"
            )
    for key in derived:
        t = weights[key]
        if key.endswith("inv_freq"):
            d = cfg.head_dim
            want = 1.0 / (cfg.rope_theta ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
            ok = t.shape == want.shape and bool(torch.allclose(t.float(), want, rtol=1e-4, atol=0))
        elif key.endswith("masked_bias"):
            ok = t.numel() == 1
        else:  # GPT-2's causal mask
            n = t.shape[-1] if t.dim() >= 2 else -1
            ok = (
                t.dim() >= 2
                and t.shape[-2] == n
                and bool(torch.equal(t.reshape(-1, n, n)[0].bool(), torch.ones(n, n, dtype=torch.bool).tril()))
            )
        if not ok:
            raise ModelLoadError(
                f"{model_id}: buffer {key!r} is not what config.json implies (kvsim recomputes it "
                "and would ignore the file's values)"
            )


def _token_id(hf: dict, key: str, cfg: ModelConfig, model_id: str, warned: list[str]) -> int | None:
    """A special token's id. Not a whole number: refused. A whole number outside the vocabulary (GPT-2's
    default eos 50256 in a 300-token checkpoint, which transformers saves and runs): loaded without it,
    with a warning (in ``warned`` and the log) that generation will not stop at it."""
    value = hf.get(key)
    if isinstance(value, list):
        value = value[0] if value else None
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ModelLoadError(f"{model_id}: config.json's {key} {value!r} is not a token id (a whole number)")
    if not 0 <= value < cfg.vocab_size:
        what = "generation will not stop at it" if key == "eos_token_id" else "it is not used"
        message = f"{model_id}: config.json's {key} {value} is outside the vocabulary (0 to {cfg.vocab_size - 1}): {what}"
        warned.append(message)
        logging.getLogger("kvsim").warning(message)
        return None
    return value


def _read_small(path: Path, limit: int = 4_000_000) -> str | None:
    """A small side file's text, or None when absent; a FIFO, device or oversized file is refused
    (reading one would block forever or fill memory)."""
    if not path.exists():
        return None
    if not path.is_file():
        raise ModelLoadError(f"{path}: not a regular file")
    if path.stat().st_size > limit:
        raise ModelLoadError(f"{path} is {path.stat().st_size:,} bytes, more than such a file can sensibly be")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelLoadError(f"{path} cannot be read ({type(exc).__name__})") from None


def _chat_template(path: Path) -> str | None:
    """The checkpoint's chat template: ``chat_template.jinja`` or ``tokenizer_config.json``'s entry.
    A template that cannot be found is no template; one that is broken fails when it is rendered."""
    jinja = _read_small(path / "chat_template.jinja")
    if jinja is not None:
        return jinja
    text = _read_small(path / "tokenizer_config.json")
    if text is None:
        return None
    try:
        config = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    template = config.get("chat_template") if isinstance(config, dict) else None
    if isinstance(template, list):  # named templates: [{"name": "default", "template": "..."}, ...]
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default")
    return template if isinstance(template, str) else None
