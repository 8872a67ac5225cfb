"""kvsim's cached decode against transformers, step by step in lockstep, one thread (issues 24 and 37).

Engines, all on the same weights (the fetched GGUF file, dequantized by kvsim's loader and by
transformers' own GGUF loader — the first step's logits are compared to show they are the same model):

* ``kv lane``: a ``Simulator`` with the ``kv`` lane, its whole step timed (the forward, the token, the record:
  top-5, KL, the rows as numpy) — what the app and ``kvsim run`` pay a token;
* ``kvsim``: the bare model, ``Transformer`` + ``KVCache``, eager (the lane's forward without the record);
* ``kvsim-compiled`` and ``kv lane compiled`` (``--kvsim-compile``): the bare model and the kv lane with the model's
  cache-free parts through ``torch.compile`` (``kvsim.models.kernels.compiled``, what ``kvsim run --compile`` runs).
  transformers' best CPU configuration is itself compiled (static cache + ``torch.compile``), so kvsim's compiled lane
  is the like-for-like answer to it; the eager lane is reported beside it;
* ``hf-eager`` and ``hf-sdpa``: transformers' model with its eager attention and with PyTorch's
  ``scaled_dot_product_attention``, its dynamic cache passed as ``cache=`` (5.24's name);
* ``hf-compiled`` (unless ``--no-hf-compiled``): a ``StaticCache`` and ``torch.compile`` of the forward (SDPA).

The best transformers configuration of the host is the ``hf-*`` engine with the lowest median step; the kv lane
and the bare model are reported against it and against each other. Each decode step runs every engine once, in
an order that rotates from step to step, each fed the same token (kvsim's greedy choice), so machine noise hits
all alike. Per step the ratio A / B is taken; the report gives the median ratio with its spread (10th–90th
percentile of the per-step ratios) and says "within noise" when that spread includes 1.

The host is printed beside the figures: the processor, the load (``uptime``'s, before and after; ratios are
withheld when it moved by more than ``KVSIM_BENCH_MAX_LOAD_CHANGE``), the single-thread read bandwidth
(``kvsim.costs.hardware.read_bandwidth``: a ``torch.sum`` over a weight-sized buffer in huge pages, best of a few;
before and after) and the one-row kernel and page kind kvsim measured fastest on this host, with why.

The floor: bytes a decode step must read (every weight once — a tied embedding once, as the LM head; an
untied embedding table only its one row — plus the K/V rows read) divided by that read bandwidth.

``--prompt-len 16,2000`` runs each prompt length in turn (each its own lockstep run). ``--busy`` runs a
CPU-saturating process (``while True: pass``) on every other core for the whole run, started before the
first measurement and ended by its id at exit; ``--busy memory`` runs one that streams memory instead (a copy
between two 256 MiB arrays, without end): the host's read bandwidth, as printed, falls, as on a laptop whose
neighbours share the memory bus. ``--clock cpu`` times each step by the thread's CPU time (one
thread: descheduling by other jobs is not charged; a memory stall still is) instead of the wall clock.

    python benchmarks/decode/decode_vs_transformers.py --model smollm2-135m --prompt-len 16,2000 [--steps 32]
        [--dtype bf16] [--no-hf-compiled] [--kvsim-compile] [--busy [cpu|memory]] [--clock cpu]
"""

from __future__ import annotations

import argparse
import atexit
import copy
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

# run as a file, python puts this folder first, not the checkout: the checkout's kvsim is measured, not an installed one
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kvsim.caches import KVCache, parse_lanes  # noqa: E402
from kvsim.costs.hardware import cpu_name, read_bandwidth  # noqa: E402
from kvsim.engine.simulate import Simulator  # noqa: E402
from kvsim.models.base import user_models_dir  # noqa: E402
from kvsim.models.loading import load_model, set_threads  # noqa: E402
from kvsim.models.precision import bf16_model  # noqa: E402
from kvsim.models.transformer import Transformer  # noqa: E402

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


class LaneEngine:
    """The ``kv`` lane of a ``Simulator``: its whole step (forward and record). It picks its own greedy token, which
    is the bare model's (same weights, same cache, same kernel); the step returns that token as one-hot logits."""

    def __init__(self, model: Transformer, tokenizer: object) -> None:
        self.model, self.tokenizer = model, tokenizer
        self._hot = torch.zeros(model.cfg.vocab_size)  # one buffer, its one entry moved: no vocabulary-sized
        self._last = 0  # allocation and fill timed as the lane's (lockstep reads a step's answer before the next)
        # each decode step's record alone (ms, wall clock): the step less the forward the simulator timed itself, a
        # figure without the noise of two separately timed steps that the lane / bare ratio carries
        self.record_ms: list[float] = []

    def _onehot(self, token: int) -> torch.Tensor:
        self._hot[self._last] = 0.0
        self._hot[token] = 1.0
        self._last = token
        return self._hot

    def prefill(self, ids: list[int]) -> torch.Tensor:
        self.sim = Simulator(self.model, self.tokenizer, ids, parse_lanes("kv"))  # type: ignore[arg-type]
        self.sim.keep_records = False
        return self._onehot(self.sim.step().token_id)

    def step(self, token: int, pos: int) -> torch.Tensor:
        if self.sim.tokens[-1] != token:
            raise SystemExit(f"error: the kv lane chose {self.sim.tokens[-1]} where the bare model chose {token}")
        t0 = time.perf_counter()
        record = self.sim.step()
        self.record_ms.append((time.perf_counter() - t0) * 1e3 - record.lanes[0].wall_ms)
        return self._onehot(record.token_id)


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


#: what a neighbour runs (``--busy``): "cpu" keeps a core busy without touching memory; "memory" streams 256 MiB from one
#: array into another without end (numpy's copy, one thread), taking a share of the memory bus as a neighbour's
#: inference or build does: on the build machine one such neighbour cut the measured single-thread read from 22 to 16 GB/s
NEIGHBOURS = {
    "cpu": "while True: pass",
    "memory": "import numpy as np\na = np.ones(64 << 20, np.float32)\nb = np.empty_like(a)\nwhile True: np.copyto(b, a)",
}


def start_busy(n: int, kind: str = "cpu") -> list[subprocess.Popen]:
    """``n`` processes that keep a core each busy (``NEIGHBOURS[kind]``), ended by their ids at exit."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", NEIGHBOURS[kind]], env=env) for _ in range(n)]

    def stop() -> None:
        for proc in procs:
            proc.kill()
            proc.wait()

    atexit.register(stop)
    return procs


def spread(ratios: list[float]) -> tuple[float, float, float]:
    ratios = sorted(ratios)
    return tuple(ratios[int(q * (len(ratios) - 1))] for q in (0.5, 0.1, 0.9))  # type: ignore[return-value]


def describe(watch: LoadWatch, a: list[float], b: list[float]) -> str:
    mid, lo, hi = spread([x / y for x, y in zip(a, b, strict=True)])
    noise = " (within noise)" if lo <= 1.0 <= hi else ""
    return f"{watch.ratio(mid, '.3f')} (10–90%: {lo:.3f}–{hi:.3f}){noise}"


def lockstep(
    engines: dict[str, object],
    ids: list[int],
    args: argparse.Namespace,
    clock: Callable[[], float],
    ref32: KvsimEngine,
) -> tuple[dict[str, list[float]], dict[str, float], dict[str, int], float, int | None, dict[str, float]]:
    compile_s: dict[str, float] = {}
    t0 = time.perf_counter()
    first = {name: e.prefill(ids) for name, e in engines.items()}  # type: ignore[attr-defined]
    prefill_s = time.perf_counter() - t0
    r32 = ref32.prefill(ids)
    same_model = {n: float((first[n].float() - first["kvsim"].float()).abs().max()) for n in engines if "lane" not in n}
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
            t0 = clock()
            outs[name] = engines[name].step(token, pos)  # type: ignore[attr-defined]
            dt_s = clock() - t0
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
    compile_s["prefill, every engine"] = prefill_s
    return times, same_model, agree, worst_div, first_div, compile_s


@torch.no_grad()
def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--dtype", default="fp32", choices=("fp32", "bf16"))
    p.add_argument("--prompt-len", default="16", help="prompt length(s), comma-separated: 16,2000")
    p.add_argument("--steps", type=int, default=32)
    p.add_argument("--warmup", type=int, default=4, help="lockstep steps run before the timed ones")
    p.add_argument("--no-hf-compiled", action="store_true")
    p.add_argument("--kvsim-compile", action="store_true")
    p.add_argument(
        "--busy",
        nargs="?",
        const="cpu",
        choices=tuple(NEIGHBOURS),
        help="a neighbour on every other core, all run long: cpu (the default) spins, memory streams memory",
    )
    p.add_argument("--clock", default="wall", choices=("wall", "cpu"), help="cpu: the thread's CPU time (one thread)")
    args = p.parse_args()
    try:
        lengths = [int(x) for x in args.prompt_len.split(",") if x.strip()]
    except ValueError:
        sys.exit(f"error: --prompt-len takes whole numbers separated by commas, got {args.prompt_len!r}")
    if not lengths or min(lengths) < 1:
        sys.exit("error: --prompt-len must be at least 1")
    busy = start_busy(max(1, (os.cpu_count() or 2) - 1), args.busy) if args.busy else []
    if busy:
        time.sleep(5)  # the spinners running before anything is measured
    watch = LoadWatch(max_change=float(os.environ.get("KVSIM_BENCH_MAX_LOAD_CHANGE", "1.0")) + len(busy))
    set_threads(1)  # torch's and numpy's BLAS: kvsim's one-row products run there (kvsim.models.kernels.row_matmul)
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    import transformers

    transformers.utils.logging.disable_progress_bar()  # the GGUF conversion's bar: not a figure
    load_before = load_avg()
    path = gguf_path(args.model)
    loaded = load_model(args.model)
    fp32 = loaded.model
    model = bf16_model(fp32) if args.dtype == "bf16" else fp32
    dt = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    base_ids = loaded.tokenizer.encode(TEXT)

    hf = transformers.AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32).eval()
    hf = hf.to(dt)
    default_attn = hf.config._attn_implementation
    hf_sdpa = hf
    hf_sdpa.set_attn_implementation("sdpa")
    hf_eager = copy.deepcopy(hf)
    hf_eager.set_attn_implementation("eager")
    choice = model.kernel_choice
    why = f"{choice.reason}" if choice is not None else "not measured (not fp32 on the CPU)"
    print(
        f"# host: {cpu_name()}, {os.cpu_count()} CPUs; single-thread read (torch.sum, huge pages) {watch.read_start:.2f} GB/s; "
        f"load (1/5/15 min) {load_before}; busy processes beside: {len(busy)}"
        f"{f' ({args.busy})' if busy else ''}; clock: {args.clock}"
    )
    print(f"# kvsim's one-row products: {model.one_row_kernel}, huge pages {model.huge_page_weights}: {why}")
    print(
        f"# torch {torch.__version__}, transformers {transformers.__version__} (default attention: {default_attn}); "
        f"{args.model} {args.dtype}, 1 thread"
    )

    cfg = model.cfg
    compiled: Transformer | None = None
    compile_failed = False
    for length in lengths:
        ids = (base_ids * (length // max(1, len(base_ids)) + 1))[:length]
        max_len = len(ids) + args.warmup + args.steps + 2
        engines: dict[str, object] = {
            "kv lane": LaneEngine(model, loaded.tokenizer),
            "kvsim": KvsimEngine(model),
            "hf-eager": HFEngine(hf_eager, False, max_len),
            "hf-sdpa": HFEngine(hf_sdpa, False, max_len),
        }
        if args.kvsim_compile and not compile_failed:
            from kvsim.models.kernels.compiled import compile_decode, warm_up

            if compiled is None:  # one compiled copy for every prompt length (its kernels compiled once)
                # loaded again, not deep-copied: a copy's weights land in ordinary pages and its fused projections
                # stop being views of one matrix, where `kvsim run --compile` compiles the loaded model itself
                again = load_model(args.model).model
                compiled = compile_decode(bf16_model(again) if args.dtype == "bf16" else again)
            t0 = time.perf_counter()
            try:
                warm_up(compiled, len(ids), lambda: KVCache(cfg.n_layers, layer_windows=cfg.layer_windows))
            except Exception as exc:  # no C++ compiler, an unsupported op: one line, the eager engines still run
                first = (str(exc).strip().splitlines() or [""])[0][:200]
                print(f"# kvsim --compile failed ({type(exc).__name__}: {first}): the compiled engines are left out")
                compile_failed = True
            else:
                print(f"# kvsim --compile: compiled and warmed up for prompt {len(ids)} in {time.perf_counter() - t0:.1f} s")
                engines["kvsim-compiled"] = KvsimEngine(compiled)
                engines["kv lane compiled"] = LaneEngine(compiled, loaded.tokenizer)
        if not args.no_hf_compiled:
            engines["hf-compiled"] = HFEngine(hf_sdpa, True, max_len)
        load_start = load_avg()
        times, same_model, agree, worst_div, first_div, spent = lockstep(engines, ids, args, clock, KvsimEngine(fp32))
        load_end = load_avg()
        bw = read_bandwidth(512 << 20)
        nbytes = bytes_per_token(model, len(ids) + args.warmup + args.steps // 2)
        floor_ms = nbytes / bw * 1e3
        med = {name: statistics.median(t) * 1e3 for name, t in times.items()}
        hf_names = [n for n in engines if n.startswith("hf-")]
        best = min(hf_names, key=lambda n: med[n])
        print(f"\n## prompt {len(ids)} tokens, {args.steps} timed steps (+{args.warmup} warm-up), lockstep, order rotating")
        print(f"load (1/5/15 min) {load_start} → {load_end}; read bandwidth now {bw / 1e9:.2f} GB/s")
        print("same model: step-0 max |Δlogit| vs kvsim: " + ", ".join(f"{n} {v:.2e}" for n, v in same_model.items()))
        print("greedy agreement with kvsim: " + ", ".join(f"{n} {a}/{args.warmup + args.steps}" for n, a in agree.items()))
        if args.dtype != "fp32":
            where = "never" if first_div is None else f"step {first_div}"
            print(f"kvsim {args.dtype} vs kvsim fp32: max |Δlogit| {worst_div:.3e}, greedy choice first differs: {where}")
        for name, s in spent.items():
            print(f"time: {name} {s:.1f} s")
        print(f"floor: {nbytes / 1e6:.1f} MB read per token / {bw / 1e9:.2f} GB/s = {floor_ms:.2f} ms")
        print(f"| engine | median ms/token ({args.clock} clock) | of the floor |")
        print("|---|---:|---:|")
        for name in engines:
            mark = " (best transformers)" if name == best else ""
            print(f"| {name}{mark} | {med[name]:.2f} | {floor_ms / med[name]:.0%} |")
        print(f"kv lane / best transformers ({best}): {describe(watch, times['kv lane'], times[best])}")
        print(f"kvsim / best transformers ({best}): {describe(watch, times['kvsim'], times[best])}")
        print(f"kv lane / kvsim (the record's cost): {describe(watch, times['kv lane'], times['kvsim'])}")
        for lane, bare in (("kv lane", "kvsim"), ("kv lane compiled", "kvsim-compiled")):
            if lane in engines:
                mid, lo, hi = spread(engines[lane].record_ms[args.warmup :])  # type: ignore[attr-defined]  # the timed steps'
                print(
                    f"{lane}'s record alone (its step less its forward, wall clock): {mid:.2f} ms (10–90%: {lo:.2f}–"
                    f"{hi:.2f}) = {watch.ratio(100 * mid / med[bare], '.1f', ' %')} of {bare}'s step"
                )
        if "kv lane compiled" in times:
            lane_c = times["kv lane compiled"]
            print(f"kv lane compiled / best transformers ({best}): {describe(watch, lane_c, times[best])}")
            print(f"kv lane compiled / kvsim-compiled (the record's cost): {describe(watch, lane_c, times['kvsim-compiled'])}")
            print(f"kv lane compiled / kv lane: {describe(watch, lane_c, times['kv lane'])}")
        # the like-for-like verdict: each side's best configuration on this host (transformers' may be compiled too)
        fastest = min((n for n in ("kv lane", "kv lane compiled") if n in times), key=lambda n: med[n])
        print(f"kvsim's fastest kv lane ({fastest}) / best transformers ({best}): {describe(watch, times[fastest], times[best])}")
        for peer in [n for n in engines if n not in ("kv lane", "kvsim", "kv lane compiled", best)]:
            print(f"kvsim / {peer}: {describe(watch, times['kvsim'], times[peer])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
