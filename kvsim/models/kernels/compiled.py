"""``--compile``: the cache-free parts of a step compiled with ``torch.compile`` (inductor).

What is compiled: on the common path (``Block.forward``: one sequence, rows rotated before they are
stored, Llama/Gemma/GPT-2 attention) each block's cache-free ops — ``Block.enter`` (input norm, QKV matmul,
QK-norm, RoPE) and ``Block.leave`` (attention over the rows the cache returned, output projection, residuals,
norms, MLP) — one graph from each layer's cache to the next's (``Block.chain``: a layer's leave and the next
layer's enter; 31 graph calls a SmolLM2 step), and the final norm + LM head (``Transformer.head``); on the other paths (packed
batches, rows rotated when read, other attentions) each block's projection (``Attention.project``) and finish
(``Block.finish``). What stays eager: the cache (``Cache.update``, the lanes' own policies, which rows each
query may see, ``Cache.observe_attention``) — so every lane keeps its own cache and its exact row counts.

A decode step into a plain ``kv`` cache (exactly ``KVCache``: it appends, evicts nothing, holds every row on every
layer; ``Transformer.one_graph_fits``) is one graph instead (``Transformer.decode_graph``): the embedding, every layer
(attention over the rows the cache held before the step and the step's own row, ``Attention.weigh_appended``) and the
head, reading the cache's rows without touching it; the cache's own ``update`` then appends each layer's new rows.
Each graph call costs ~0.2 ms of wrappers and guards beyond its work, 31 of them a SmolLM2 step: one graph saves
~5 ms of a ~37 ms step (docs/benchmarks.md). Its layers are one region compiled once (``nested_compile_region``).
Only in torch.compile's default mode: under ``reduce-overhead`` (CUDA graphs, recorded again for every held
length) steps stay layer by layer.

The values are those of the eager model within float rounding (inductor fuses the elementwise work and may
reorder a reduction); tests/reference/test_compiled.py checks logits and greedy tokens against the eager path.

Compiling takes seconds to minutes (SmolLM2 on 2 shared cores: ~2 min the first time, ~40 s with inductor's cache
warm, most of it the one-graph step's three variants: the first length, a symbolic length, a full buffer); the
compiled kernels are kept in inductor's cache under the user cache folder (``compile_cache_dir``), so a second run
with the same model and shapes reads them back.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import torch

from ...caches.kv import KVCache
from ..transformer import Attention, Block, Transformer

#: torch.compile's cap on recompilations of one function: a step of one token is one graph, longer
#: steps (a prefill, the uncached lane) share one graph with a symbolic length
RECOMPILE_LIMIT = 64


def compile_cache_dir() -> Path:
    """Where inductor keeps compiled kernels: ``KVSIM_CACHE_DIR`` or the user cache folder, ``torch-inductor``."""
    override = os.environ.get("KVSIM_CACHE_DIR")
    if override:
        return Path(override) / "torch-inductor"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("kvsim", appauthor=False)) / "torch-inductor"


def compile_decode(model: Transformer, cache_dir: Path | None = None, mode: str | None = None) -> Transformer:
    """Wrap ``model``'s cache-free parts with ``torch.compile`` (in place; returns ``model``). Compilation
    itself happens on the first forward of each shape: ``warm_up`` runs those and times them. ``mode``: torch.compile's
    (``"reduce-overhead"``: each part replayed as a CUDA graph on a GPU, ``benchmarks/decode/gpu_graphs.py``)."""
    if model.compiled:
        return model
    folder = compile_cache_dir() if cache_dir is None else Path(cache_dir)
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder)  # read by inductor when it first writes a kernel
    import torch._dynamo

    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, RECOMPILE_LIMIT)
    for block in model.layers:
        if isinstance(block, Block) and isinstance(block.attn, Attention):
            block.attn.project = torch.compile(block.attn.project, mode=mode)  # type: ignore[method-assign]
        if isinstance(block, Block):
            block.finish = torch.compile(block.finish, mode=mode)  # type: ignore[method-assign]
            if type(block.attn) is Attention:  # the common path: the layer's cache-free ops in two graphs
                block.enter = torch.compile(block.enter, mode=mode)  # type: ignore[method-assign]
                block.leave = torch.compile(block.leave, mode=mode)  # type: ignore[method-assign]
                block.chain = torch.compile(block.chain, mode=mode)  # type: ignore[method-assign]
    model.head = torch.compile(model.head, mode=mode)  # type: ignore[method-assign]
    # CUDA graphs (reduce-overhead) would record the one graph again for every held length: layer by layer instead
    model.one_graph_steps = mode is None and model.layers_fit_one_graph()
    if model.one_graph_steps:
        model.decode_graph = torch.compile(model.decode_graph)  # type: ignore[method-assign]
    model.compiled = True
    return model


def warm_up(model: Transformer, prompt_len: int, make_cache: object, say: Callable[[str], None] | None = None) -> float:
    """Run the shapes a run meets — a prefill of ``prompt_len`` tokens, one of ``prompt_len + 1`` (the
    uncached lane's next step: the graph with a symbolic length), two one-token steps as one graph (a plain ``kv``
    cache, ``Transformer.decode_graph``) and two layer by layer (every other lane's cache), then, when the prompt
    leaves the cache's first buffer (``initial_capacity`` rows) room, one step on a cache whose buffer is full (its
    rows then lie contiguous, a case the graphs are compiled for apart) — on throwaway caches (``make_cache()``), so
    compiling happens here and not inside a timed step; returns its seconds. ``say``: told what is compiled next, and
    how long the last part took (compiling SmolLM2 takes minutes the first time: a command line shows it is working)."""
    start = time.perf_counter()
    dev = model.device
    cache = make_cache()  # type: ignore[operator]
    # the first buffer of a plain kv cache (the caches that grow in buffers); other policies: no such step
    full = cache.initial_capacity if isinstance(cache, KVCache) else 0
    ids = torch.zeros((1, max(prompt_len + 1, full)), dtype=torch.long, device=dev)
    began: float | None = None  # when the part under way began (none before the first)

    def next_part(what: str) -> None:
        nonlocal began
        if say is not None:
            now = time.perf_counter()
            say(what if began is None else f"{what} (the last part took {now - began:.1f} s)")
            began = now

    with torch.no_grad():
        for n in (prompt_len, prompt_len + 1) if prompt_len > 1 else (prompt_len,):
            next_part(f"a prefill of {n} tokens")
            cache = make_cache()  # type: ignore[operator]
            model(ids[:, :n], torch.arange(n, device=dev), cache, last_only=True)
        # a cache with per-layer windows (Gemma 3's) never takes the one graph (Transformer.one_graph_fits)
        one_graph = model.one_graph_steps
        windowed = isinstance(cache, KVCache) and cache.layer_windows is not None
        try:  # a step as one graph (a plain kv cache), then layer by layer (every other lane's cache)
            for as_one, positions in ((True, (n, n + 1)), (False, (n + 2, n + 3))):
                if as_one and (not one_graph or windowed):
                    continue
                next_part("a decode step as one graph" if as_one else "a decode step layer by layer")
                model.one_graph_steps = as_one
                for pos in positions:
                    model(ids[:, :1], torch.tensor([pos], device=dev), cache, last_only=True)
        finally:
            model.one_graph_steps = one_graph
        if prompt_len + 1 < full:
            next_part(f"a decode step on a full buffer of {full} rows")
            cache = make_cache()  # type: ignore[operator]
            model(ids[:, :full], torch.arange(full, device=dev), cache, last_only=True)
            model(ids[:, :1], torch.tensor([full], device=dev), cache, last_only=True)
    next_part("done")
    return time.perf_counter() - start
