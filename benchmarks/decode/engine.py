"""Engine benchmark: kvsim's cached decode vs Hugging Face transformers' own cached decode.

Both run the *same* random weights (a transformers model is built from a config, its state dict is
mapped into kvsim's model), fp32, greedy, one token at a time after a 16-token prompt. Timings are
interleaved (kvsim block, transformers block, …) and the median per-token time of each is compared
in one run, so machine noise hits both alike. Also: the cost of recording (a full simulator step
with its StepRecord vs a bare cached forward).

    python benchmarks/decode/engine.py [--new-tokens 128] [--rounds 3] [--device cpu|cuda] [--shapes gpt2-small,smollm2-135m]

Goals: kvsim / transformers ≤ 1.0; recording overhead ≤ 15 %.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

from kvsim.caches import KVCache, parse_spec
from kvsim.core.compare import compare_paired
from kvsim.core.devices import sync
from kvsim.engine.simulate import Simulator
from kvsim.models.checkpoints import _gpt2_state, _llama_state
from kvsim.models.hf_config import config_from_hf
from kvsim.models.loading import set_threads
from kvsim.models.tokenizer import ByteTokenizer
from kvsim.models.transformer import Transformer

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402


def build_pair(shape: str, device: torch.device):
    import transformers

    torch.manual_seed(0)
    if shape == "gpt2-small":
        hf_cfg = transformers.GPT2Config(n_layer=12, n_head=12, n_embd=768, n_positions=1024, vocab_size=50257)
        hf = transformers.GPT2LMHeadModel(hf_cfg)
    elif shape == "smollm2-135m":
        hf_cfg = transformers.LlamaConfig(
            num_hidden_layers=30,
            num_attention_heads=9,
            num_key_value_heads=3,
            hidden_size=576,
            intermediate_size=1536,
            vocab_size=49152,
            max_position_embeddings=8192,
            rope_theta=100000.0,
            rms_norm_eps=1e-5,
            tie_word_embeddings=True,
        )
        hf = transformers.LlamaForCausalLM(hf_cfg)
    else:
        raise SystemExit(f"unknown shape {shape}")
    hf = hf.eval().to(device)
    cfg = config_from_hf(hf_cfg.to_dict(), shape)
    ours = Transformer(cfg)
    state = {k: v.detach().clone().float().cpu() for k, v in hf.state_dict().items()}
    mapped = (_gpt2_state if cfg.family == "gpt2" else _llama_state)(state, cfg)
    if cfg.tie_embeddings:
        mapped["lm_head.weight"] = mapped["tok_embeddings.weight"]
    ours.load_state_dict(mapped, strict=True)
    ours = ours.eval().to(device)
    if device.type == "cpu":
        ours.use_decode_friendly_layout()  # as kvsim.loading.load_model does
    return hf, ours, cfg


def _cache_keyword(hf) -> str:
    """transformers' name for the cache, in and out: ``cache`` since 5.2x (5.24 warns that ``past_key_values``
    is deprecated), ``past_key_values`` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(hf.forward).parameters else "past_key_values"


@torch.no_grad()
def time_hf(hf, prompt: torch.Tensor, new: int, device) -> list[float]:
    key = _cache_keyword(hf)
    out = hf(input_ids=prompt, use_cache=True)
    past, token = out[key], out.logits[:, -1:].argmax(-1)
    times = []
    for _ in range(new):
        sync(device)
        t0 = time.perf_counter()
        out = hf(input_ids=token, use_cache=True, **{key: past})
        past = out[key]
        token = out.logits[:, -1:].argmax(-1)
        sync(device)
        times.append(time.perf_counter() - t0)
    return times


@torch.no_grad()
def time_kvsim_bare(model: Transformer, prompt: torch.Tensor, new: int, device) -> list[float]:
    cache = KVCache(model.cfg.n_layers)
    p = prompt.shape[1]
    out = model(prompt, torch.arange(p, device=device), cache, last_only=True)
    token = out.logits[:, -1:].argmax(-1)
    times = []
    for i in range(new):
        sync(device)
        t0 = time.perf_counter()
        out = model(token, torch.arange(p + i, p + i + 1, device=device), cache, last_only=True)
        token = out.logits[:, -1:].argmax(-1)
        sync(device)
        times.append(time.perf_counter() - t0)
    return times


def time_kvsim_recorded(model: Transformer, prompt: torch.Tensor, new: int, device) -> list[float]:
    sim = Simulator(model, ByteTokenizer(max(256, model.cfg.vocab_size)), prompt[0].tolist(), lanes=(parse_spec("cached"),))
    sim.step()
    times = []
    for _ in range(new):
        t0 = time.perf_counter()
        sim.step()
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--shapes", default="gpt2-small,smollm2-135m")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    args = ap.parse_args()
    watch = LoadWatch()  # the load beside the figures; no ratio when it moved during the run
    if args.threads:
        set_threads(args.threads)  # torch's and numpy's BLAS (the decode kernel's) threads
    device = torch.device(args.device)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {device}, "
        f"{args.new_tokens} new tokens after a 16-token prompt, {args.rounds} interleaved rounds\n"
    )
    print(f"{'shape':<14} {'transformers':>13} {'kvsim bare':>11} {'kvsim+record':>13} {'kvsim/hf':>9} {'record overhead':>16}")
    for shape in args.shapes.split(","):
        hf, ours, cfg = build_pair(shape, device)
        prompt = torch.randint(0, cfg.vocab_size, (1, 16), generator=torch.Generator().manual_seed(1)).to(device)
        # warm-up, then interleaved rounds
        time_hf(hf, prompt, 4, device)
        time_kvsim_bare(ours, prompt, 4, device)
        hf_t, bare_t, rec_t = [], [], []
        for _ in range(args.rounds):
            hf_t += time_hf(hf, prompt, args.new_tokens, device)
            bare_t += time_kvsim_bare(ours, prompt, args.new_tokens, device)
            rec_t += time_kvsim_recorded(ours, prompt, args.new_tokens, device)
        h, b, r = (statistics.median(x) * 1e3 for x in (hf_t, bare_t, rec_t))
        paired = compare_paired(hf_t, bare_t, name="kvsim", baseline_name="transformers")  # token i with token i
        print(
            f"{shape:<14} {h:>10.2f} ms {b:>8.2f} ms {r:>10.2f} ms {watch.ratio(b / h, short=True):>9} "
            f"{watch.ratio(100 * (r / b - 1), '.1f', '%', short=True):>16}"
        )
        if watch.steady:
            print(f"{'':<14} kvsim / transformers per token, paired: {paired.describe()}")


if __name__ == "__main__":
    main()
