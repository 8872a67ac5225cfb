"""KV offload tiers, measured: requests behind two long system prompts, alternating, through a device pool that
holds one prefix at a time — prefix caching off, on without tiers, on with a host tier, on with a disk tier —
then the crossover: the prompt length past which loading a prefix's blocks beats computing them again, measured
here and computed for an H100 from its bandwidths.

    python benchmarks/serving/offload.py [--model smollm2-135m] [--steps 4] [--block-size 16] [--repeats 3]
        [--pool-blocks N] [--lengths 16,64,256,1024] [--threads 1]

Prints, per run: every request's TTFT (median of ``--repeats`` timed prefills, the pool and the tiers rolled back
between), its hits from the device pool / host / disk, and what each tier stored and loaded (bytes, measured ms);
then whether every run gave the same tokens. The crossover table: for a prompt of L tokens, the prefill that
computes all L rows (median of 3) against loading L/B blocks from the host tier, from the disk tier (the file just
written: the page cache) and from the disk cold (each file fsynced and dropped from the page cache with
posix_fadvise first). The H100 line computes both sides from datasheet figures: recompute at the bf16 tensor peak
(``kvsim.costs.hardware``; a real prefill is slower, so the crossover it gives is the longest), loads at the link's
bandwidth (no latency): PCIe Gen5 x16 for host, one NVMe drive for disk (``--h100-host-gbs``, ``--h100-disk-gbs``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

from kvsim.caches.blocks import block_hash
from kvsim.caches.paged import PagedCache
from kvsim.caches.tiers import OffloadSpec, TieredBlockPool
from kvsim.costs.hardware import GPUS
from kvsim.models.loading import load_model, set_threads
from kvsim.serving.request_lists import encode_requests, load_requests
from kvsim.serving.requests import run_requests

sys.path.append(str(Path(__file__).resolve().parents[1]))  # benchmarks/, where the shared _load.py is
from _load import LoadWatch  # noqa: E402

LISTS = ("resources/requests/support-desk.json", "resources/requests/pt-prompt-de-sistema.json")


def interleaved_requests(tokenizer):
    """Two request lists, each behind its long system prompt, taken in turn (A1, B1, A2, B2, …)."""
    a, b = (encode_requests(tokenizer, load_requests(path)) for path in LISTS)
    out = []
    for x, y in zip(a, b, strict=False):
        out += [x, y]
    return out


def prefill_ms(model, tokens: list[int], block_size: int, repeats: int = 3) -> float:
    """Median time of a prefill computing every row of ``tokens`` (a fresh paged cache each time)."""
    times = []
    for _ in range(repeats):
        cache = PagedCache(model.cfg.n_layers, block_size)
        t0 = time.perf_counter()
        model(torch.tensor([tokens]), torch.arange(len(tokens)), cache, last_only=True)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def load_ms(model, n_blocks: int, block_size: int, spec: OffloadSpec, cold: bool = False) -> float:
    """Time to bring ``n_blocks`` offloaded blocks back into a device pool (their moves' measured ms, summed)."""
    cfg = model.cfg
    pool = TieredBlockPool(block_size, n_blocks, spec)
    pool.ensure_storage(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, model.dtype, model.device)
    try:
        hashes, parent = [], None
        for j in range(n_blocks):  # n registered blocks of random rows, freed
            b = pool.allocate()
            k, v = pool.rows()
            k[:, b].normal_()
            v[:, b].normal_()
            tokens = list(range(j * block_size, (j + 1) * block_size))
            parent = block_hash(parent, tokens)
            pool.filled[b] = block_size
            pool.register(b, parent, tokens)
            hashes.append(parent)
        for b in range(n_blocks):
            pool.release(b)
        taken = [pool.allocate() for _ in range(n_blocks)]  # every one evicted: stored in the tier
        for b in taken:
            pool.release(b)
        if cold and pool.disk is not None:
            for h in hashes:
                fd = os.open(pool.disk.path(h), os.O_RDONLY)
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                os.close(fd)
        before = len(pool.moves)
        for h in hashes:
            pool.release(pool.recall(h))
        return sum(m.ms for m in pool.moves[before:])
    finally:
        pool.close()


def main() -> None:
    watch = LoadWatch()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--pool-blocks", type=int, default=None, help="default: the longest request's blocks + 2")
    p.add_argument("--lengths", default="16,64,256,1024")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--h100-host-gbs", type=float, default=64.0, help="host→GPU GB/s (PCIe Gen5 x16, one direction)")
    p.add_argument("--h100-disk-gbs", type=float, default=7.0, help="disk→GPU GB/s (one PCIe Gen4 NVMe drive)")
    args = p.parse_args()
    set_threads(args.threads)
    loaded = load_model(args.model)
    model, cfg, size = loaded.model, loaded.model.cfg, args.block_size
    inputs = interleaved_requests(loaded.tokenizer)
    longest = max(len(r.prompt_ids) for r in inputs)
    pool_blocks = args.pool_blocks or -(-(longest + args.steps) // size) + 2
    block_bytes = 2 * cfg.n_layers * size * cfg.n_kv_heads * cfg.head_dim * model.dtype.itemsize
    everything = f"host:{block_bytes * 4 * pool_blocks}"
    runs = {
        "prefix caching off (recompute)": {"prefix_caching": False},
        "on, no tiers": {},
        "on, host tier": {"offload": OffloadSpec.parse(everything)},
        "on, disk tier": {"offload": OffloadSpec.parse(everything.replace("host", "disk"))},
    }
    print(
        f"model {loaded.model_id}: {cfg.n_layers} layers, {cfg.n_kv_heads} kv heads × {cfg.head_dim}, {model.dtype}; "
        f"{len(inputs)} requests from {' and '.join(LISTS)}, taken in turn (prompts {min(len(r.prompt_ids) for r in inputs)}–"
        f"{longest} tokens); blocks of {size} ({block_bytes / 1e6:.3f} MB), device pool {pool_blocks} blocks; "
        f"{args.steps} steps; TTFT = median of {args.repeats}; {args.threads} thread(s)"
    )
    results = {}
    for name, extra in runs.items():
        run = run_requests(
            model, loaded.tokenizer, inputs, block_size=size, pool_blocks=pool_blocks, steps=args.steps,
            repeats=args.repeats, keep_snapshots=False, **extra,
        )  # fmt: skip
        results[name] = run
    base = next(iter(results.values()))
    print(f"\n{'run':<32} {'TTFT total ms':>13} " + " ".join(f"{'r' + str(i + 1):>7}" for i in range(len(inputs))))
    for name, run in results.items():
        ttfts = " ".join(f"{r.ttft_ms:7.1f}" for r in run.requests)
        print(f"{name:<32} {sum(r.ttft_ms for r in run.requests):13.1f} {ttfts}")
    print("\nhits (blocks) per request, device / host / disk:")
    for name, run in results.items():
        offload = run.meta.get("offload")
        recalled = offload["recalled"] if isinstance(offload, dict) else [[0, 0]] * len(inputs)
        cells = [f"{r.hit_blocks - sum(t)}/{t[0]}/{t[1]}" for r, t in zip(run.requests, recalled, strict=True)]
        print(f"{name:<32} " + " ".join(f"{c:>8}" for c in cells))
        if isinstance(offload, dict):
            for tier, t in offload["tiers"].items():
                print(
                    f"{'':<34}{tier}: stored {t['store_blocks']} blocks "
                    f"({t['store_bytes'] / 1e6:.2f} MB, {t['store_ms']:.1f} ms), "
                    f"loaded {t['load_blocks']} ({t['load_bytes'] / 1e6:.2f} MB, {t['load_ms']:.1f} ms)"
                )
    same = all([r.output_ids for r in run.requests] == [r.output_ids for r in base.requests] for run in results.values())
    print(f"\ntokens identical in every run: {same}")
    saved = [
        a.ttft_ms - b.ttft_ms for a, b in zip(results["on, no tiers"].requests, results["on, host tier"].requests, strict=True)
    ]
    print(f"TTFT saved by the host tier against recompute (no tiers − host tier), ms: {[round(s, 1) for s in saved]}")
    totals = [sum(r.ttft_ms for r in results[name].requests) for name in ("on, host tier", "on, no tiers")]
    print(f"TTFT total, host tier / no tiers: {watch.ratio(totals[0] / totals[1])}")

    print(f"\ncrossover here ({model.dtype}, blocks of {size}): ms to have a prompt's K/V rows on the device")
    print(f"{'L':>6} {'recompute':>10} {'host':>8} {'disk':>8} {'disk cold':>10}")
    spec_host, spec_disk = OffloadSpec(block_bytes * 1024, 0), OffloadSpec(0, block_bytes * 1024)
    load_ms(model, 2, size, spec_disk)  # once untimed: the first safetensors read pays its imports
    for length in (int(x) for x in args.lengths.split(",")):
        if length > cfg.max_seq_len:
            continue
        tokens = [int(t) for t in torch.randint(0, cfg.vocab_size, (length,), generator=torch.Generator().manual_seed(0))]
        n = -(-length // size)
        row = (
            prefill_ms(model, tokens, size),
            load_ms(model, n, size, spec_host),
            load_ms(model, n, size, spec_disk),
            load_ms(model, n, size, spec_disk, cold=True),
        )
        print(f"{length:>6} {row[0]:10.2f} {row[1]:8.2f} {row[2]:8.2f} {row[3]:10.2f}")

    chip = GPUS["H100 SXM"]
    params = sum(p.numel() for name, p in model.named_parameters() if "embed" not in name)
    kv_token = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 2  # bf16 on the GPU
    attn = 2 * cfg.n_layers * cfg.n_heads * cfg.head_dim  # causal QK and PV FLOPs per token per earlier token
    print(
        f"\nH100 SXM, computed: recompute L tokens = (2·{params / 1e6:.1f}M·L + {attn}·L²) FLOPs at {chip.bf16_flops / 1e12:.0f} "
        f"TFLOP/s (bf16 dense peak); load = L·{kv_token:,} B (bf16 K/V) at {args.h100_host_gbs:g} GB/s (host), "
        f"{args.h100_disk_gbs:g} GB/s (disk)"
    )
    for tier, gbs in (("host", args.h100_host_gbs), ("disk", args.h100_disk_gbs)):
        # load < recompute  ⇔  L·kv/bw < (2P·L + a·L²)/F  ⇔  L > (kv·F/bw − 2P)/a
        bound = (kv_token * chip.bf16_flops / (gbs * 1e9) - 2 * params) / attn
        where = "every length" if bound <= 1 else f"L > {bound:,.0f} tokens"
        past = " (past the model's context)" if bound > cfg.max_seq_len else ""
        print(f"  loading from {tier} beats recomputing for {where}{past}")


if __name__ == "__main__":
    main()
