"""kvsim's cached decode against transformers, step by step in lockstep, one thread (issue 24).

Engines, all on the same weights (the fetched GGUF file, dequantized by kvsim's loader and by
transformers' own GGUF loader — the first step's logits are compared to show they are the same model):

* ``kvsim``: ``Transformer`` + ``KVCache``, eager (what a lane runs);
* ``kvsim-compiled`` (``--kvsim-compile``): the same with ``kvsim.models.kernels.compiled`` (``run --compile``);
* ``hf-eager``: transformers' model, its default dynamic cache, passed as ``cache=`` (5.24's name);
* ``hf-compiled`` (unless ``--no-hf-compiled``): transformers' best CPU configuration, a ``StaticCache``
  and ``torch.compile`` of the forward.

Each decode step runs every engine once, in an order that rotates from step to step, each fed the same
token (kvsim's greedy choice), so machine noise hits all alike. Per step the ratio kvsim / peer is taken;
the report gives the median ratio with its spread (10th–90th percentile of the per-step ratios) and says
"within noise" when that spread includes 1.

The floor: bytes a decode step must read (every weight once — a tied embedding once, as the LM head; an
untied embedding table only its one row — plus the K/V rows read) divided by this machine's single-thread
read bandwidth, measured as ``torch.sum`` over a float32 buffer of the weights' size
(``kvsim.costs.hardware.read_bandwidth``, the roofline's own method: best of a few).
``uptime``'s load is printed before and after.

    python benchmarks/decode/decode_vs_transformers.py --model smollm2-135m [--dtype bf16] [--prompt-len 16]
        [--steps 32] [--no-hf-compiled] [--kvsim-compile]
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
from pathlib import Path

import torch

from kvsim.caches import KVCache
from kvsim.costs.hardware import read_bandwidth
from kvsim.models.base import user_models_dir
from kvsim.models.loading import load_model, set_threads
from kvsim.models.precision import bf16_model
from kvsim.models.transformer import Transformer

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402

TEXT = "The key-value cache is a technique that lets a transformer reuse what it computed for earlier tokens, so"


def load_avg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def bytes_per_token(model: Transformer, context: int) -> int:
    """Weights read by one decode step (+ the K/V rows of ``context`` positions)."""
    cfg = model.cfg
    total = model.weight_bytes()
    if not cfg.tie_embeddings:  # the embedding table: one row looked up, not the table
        total -= model.tok_embeddings.weight.numel() * model.tok_embeddings.weight.element_size()
        total += cfg.dim * model.tok_embeddings.weight.element_size()
    kv = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * context * model.dtype.itemsize
    return total + kv


def gguf_path(name: str) -> Path:
    folder = user_models_dir() / name
    files = sorted(folder.glob("*.gguf"))
    if not files:
        sys.exit(f"error: {folder} holds no .gguf file: run `kvsim models get {name}` once")
    return files[0]


class KvsimEngine:
    def __init__(self, model: Transformer) -> None:
        self.model = model

    def prefill(self, ids: list[int]) -> torch.Tensor:
        cfg = self.model.cfg
        self.cache = KVCache(cfg.n_layers, layer_windows=cfg.layer_windows)
        return self.model(torch.tensor([ids]), torch.arange(len(ids)), self.cache, last_only=True).logits[0, -1]

    def step(self, token: int, pos: int) -> torch.Tensor:
        return self.model(torch.tensor([[token]]), torch.tensor([pos]), self.cache, last_only=True).logits[0, -1]


class HFEngine:
    """transformers' forward with its default (dynamic) cache, or a static cache and torch.compile."""

    def __init__(self, hf, static: bool, max_len: int) -> None:
        self.hf, self.static, self.max_len = hf, static, max_len
        self.forward = torch.compile(hf.forward, fullgraph=True) if static else hf.forward

    def prefill(self, ids: list[int]) -> torch.Tensor:
        from transformers import DynamicCache, StaticCache

        self.cache = StaticCache(config=self.hf.config, max_cache_len=self.max_len) if self.static else DynamicCache()
        n = len(ids)
        # the prompt through the eager forward (one shape), the steps through the compiled one
        out = self.hf(torch.tensor([ids]), position_ids=torch.arange(n)[None], cache=self.cache, use_cache=True)
        return out.logits[0, -1]

    def step(self, token: int, pos: int) -> torch.Tensor:
        out = self.forward(torch.tensor([[token]]), position_ids=torch.tensor([[pos]]), cache=self.cache, use_cache=True)
        return out.logits[0, -1]


@torch.no_grad()
def main() -> int:
    watch = LoadWatch()  # the load beside the figures; no ratio when it moved during the run
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--dtype", default="fp32", choices=("fp32", "bf16"))
    p.add_argument("--prompt-len", type=int, default=16)
    p.add_argument("--steps", type=int, default=32)
    p.add_argument("--warmup", type=int, default=4, help="lockstep steps run before the timed ones")
    p.add_argument("--no-hf-compiled", action="store_true")
    p.add_argument("--kvsim-compile", action="store_true")
    args = p.parse_args()
    set_threads(1)  # torch's and numpy's BLAS: kvsim's one-row products run there (kvsim.models.kernels.row_matmul)
    import transformers

    load_before = load_avg()
    path = gguf_path(args.model)
    fp32 = load_model(args.model).model
    model = bf16_model(fp32) if args.dtype == "bf16" else fp32
    dt = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    ids = load_model(args.model).tokenizer.encode(TEXT)
    ids = (ids * (args.prompt_len // max(1, len(ids)) + 1))[: args.prompt_len]
    max_len = len(ids) + args.warmup + args.steps + 2

    hf = transformers.AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32).eval()
    hf = hf.to(dt)
    engines: dict[str, object] = {"kvsim": KvsimEngine(model), "hf-eager": HFEngine(hf, False, max_len)}
    compile_s: dict[str, float] = {}
    if args.kvsim_compile:
        from kvsim.models.kernels.compiled import compile_decode, warm_up

        compiled = compile_decode(copy.deepcopy(model))
        compile_s["kvsim-compiled"] = warm_up(compiled, len(ids), lambda: KVCache(compiled.cfg.n_layers))
        engines["kvsim-compiled"] = KvsimEngine(compiled)
    if not args.no_hf_compiled:
        engines["hf-compiled"] = HFEngine(hf, True, max_len)

    ref32 = KvsimEngine(fp32)  # the fp32 reference, for the divergence of bf16 (not timed)
    first = {name: e.prefill(ids) for name, e in engines.items()}  # type: ignore[attr-defined]
    r32 = ref32.prefill(ids)
    same_model = {name: float((first[name].float() - first["kvsim"].float()).abs().max()) for name in engines}
    token = int(first["kvsim"].argmax())
    times: dict[str, list[float]] = {name: [] for name in engines}
    names = list(engines)
    worst_div, first_div, agree = float((first["kvsim"].float() - r32).abs().max()), None, {n: 0 for n in names}
    t_compile = time.perf_counter()
    for step in range(args.warmup + args.steps):
        pos = len(ids) + step
        order = names[step % len(names) :] + names[: step % len(names)]
        outs = {}
        for name in order:
            t0 = time.perf_counter()
            outs[name] = engines[name].step(token, pos)  # type: ignore[attr-defined]
            dt_s = time.perf_counter() - t0
            if step >= args.warmup:
                times[name].append(dt_s)
        if step == 0 and "hf-compiled" in engines:
            compile_s["hf-compiled (first steps)"] = time.perf_counter() - t_compile
        ref = ref32.step(token, pos)
        worst_div = max(worst_div, float((outs["kvsim"].float() - ref).abs().max()))
        if first_div is None and int(outs["kvsim"].argmax()) != int(ref.argmax()):
            first_div = step + 1
        for name in names:
            agree[name] += int(outs[name].argmax()) == int(outs["kvsim"].argmax())
        token = int(outs["kvsim"].argmax())
    load_after = load_avg()

    nbytes = bytes_per_token(model, len(ids) + args.warmup + args.steps // 2)
    bw = read_bandwidth(model.weight_bytes())
    floor_ms = nbytes / bw * 1e3
    med = {name: statistics.median(t) * 1e3 for name, t in times.items()}
    print(
        f"# {args.model} {args.dtype}, prompt {len(ids)}, {args.steps} timed steps (+{args.warmup} warm-up), 1 thread; "
        f"kvsim's one-row products: {model.one_row_kernel}"
    )
    print(
        f"torch {torch.__version__}, transformers {transformers.__version__}; "
        f"load (1/5/15 min) before {load_before}, after {load_after}"
    )
    print("same model: step-0 max |Δlogit| vs kvsim: " + ", ".join(f"{n} {v:.2e}" for n, v in same_model.items()))
    print(
        "greedy agreement with kvsim over the steps: "
        + ", ".join(f"{n} {a}/{args.warmup + args.steps}" for n, a in agree.items())
    )
    if args.dtype != "fp32":
        where = "never" if first_div is None else f"step {first_div}"
        print(f"kvsim {args.dtype} vs kvsim fp32: max |Δlogit| {worst_div:.3e}, greedy choice first differs: {where}")
    for name, s in compile_s.items():
        print(f"compile: {name} {s:.1f} s")
    print(f"floor: {nbytes / 1e6:.1f} MB read per token / {bw / 1e9:.2f} GB/s read (1 thread) = {floor_ms:.2f} ms")
    print("| engine | median ms/token | of the floor |")
    print("|---|---|---|")
    for name in names:
        print(f"| {name} | {med[name]:.2f} | {floor_ms / med[name]:.0%} |")
    for peer in [n for n in names if n != "kvsim"]:
        ratios = sorted(a / b for a, b in zip(times["kvsim"], times[peer], strict=True))
        lo, mid, hi = (ratios[int(q * (len(ratios) - 1))] for q in (0.1, 0.5, 0.9))
        noise = " (within noise)" if lo <= 1.0 <= hi else ""
        print(f"kvsim / {peer}: {watch.ratio(mid, '.3f')} (10–90%: {lo:.3f}–{hi:.3f}){noise}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
