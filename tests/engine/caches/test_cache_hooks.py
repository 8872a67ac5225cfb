"""The cache interface is declared, not probed: every hook the model and the simulator call on a cache is declared
on ``kvsim.caches.base.Cache`` with its default, so a policy with only the abstract methods runs, and nothing in
the engine looks a hook up with ``getattr``/``hasattr``. A packed batch (several sequences in one row) is a
``PackedBatch`` of its own, which the model tells apart with ``isinstance``."""

from __future__ import annotations

import ast
from pathlib import Path

import torch
from helpers import FAMILY_SPECS, ROOT, load

from kvsim.caches import KVCache
from kvsim.caches.base import Cache, PackedBatch, PolicyInfo, SequenceAttention

ENGINE = ROOT / "kvsim"
#: the files that call a lane's cache whatever its policy (elsewhere a cache is a known policy, e.g. speculative)
ANY_POLICY = [
    "kvsim/models/transformer.py",
    "kvsim/models/attention/mla.py",
    "kvsim/models/attention/hybrid.py",
    "kvsim/models/attention/cla.py",
    "kvsim/engine/simulate.py",
    "kvsim/engine/lane.py",
]


def _declared() -> set[str]:
    return {name for cls in (Cache, PackedBatch) for klass in cls.__mro__ for name in vars(klass)}


def _engine_files() -> list[Path]:
    # the worktree's links (kvsim/ui → ../ui, kvsim/resources) are the app, not the engine
    return [p for p in sorted(ENGINE.rglob("*.py")) if not any(q.is_symlink() for q in p.relative_to(ROOT).parents if q.parts)]


def test_no_cache_hook_is_probed_with_getattr() -> None:
    """No ``getattr``/``hasattr`` names an attribute of the cache interface, nor reads anything off a cache."""
    declared = _declared() - {"__doc__", "__module__", "__init__", "__dict__", "__weakref__"}
    probes = []
    for path in _engine_files():
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")):
                continue
            if len(node.args) < 2:
                continue
            target = ast.get_source_segment(source, node.args[0]) or ""
            name = node.args[1].value if isinstance(node.args[1], ast.Constant) else None
            if "cache" in target.lower() or name in declared:
                probes.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.get_source_segment(source, node)}")
    assert not probes, "declare the hook on kvsim.caches.base.Cache and call it:\n" + "\n".join(probes)


def test_the_scan_finds_a_probe() -> None:
    """(The scan above would see one: a probe written as the engine used to write them is found.)"""
    source = 'observe = getattr(cache, "observe_attention", None)\nflag = getattr(type(lane.cache), "holds_latent", False)'
    calls = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "getattr"]
    assert len(calls) == 2
    assert all("cache" in (ast.get_source_segment(source, c.args[0]) or "") for c in calls)
    assert {"observe_attention", "holds_latent"} <= _declared()


def test_every_attribute_read_off_any_policys_cache_is_declared_on_cache() -> None:
    declared = _declared()
    undeclared = []
    for rel in ANY_POLICY:
        source = (ROOT / rel).read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.Attribute):
                continue
            owner = node.value
            on_cache = (isinstance(owner, ast.Name) and owner.id == "cache") or (
                isinstance(owner, ast.Attribute) and owner.attr == "cache"
            )
            if on_cache and node.attr not in declared:
                undeclared.append(f"{rel}:{node.lineno}: .{node.attr}")
    assert not undeclared, "read off a cache of any policy, but not declared on Cache:\n" + "\n".join(undeclared)


class _BareCache(Cache):
    """Only the abstract methods: every hook keeps the default Cache declares."""

    def __init__(self, n_layers: int) -> None:
        self.n_layers = n_layers
        self.reset()

    def describe(self) -> PolicyInfo:
        return PolicyInfo("bare", "bare", "appends every row", True, False, False)

    def update(self, layer, k_new, v_new, positions):
        k, v, p = self._rows[layer]
        self._rows[layer] = (
            k_new if k is None else torch.cat([k, k_new], 2),
            v_new if v is None else torch.cat([v, v_new], 2),
            positions if p is None else torch.cat([p, positions]),
        )
        return self._rows[layer][0], self._rows[layer][1]

    def key_positions(self, layer):
        return self._rows[layer][2]

    def reset(self) -> None:
        self._rows = [(None, None, None)] * self.n_layers

    def truncate(self, n_tokens: int) -> None:
        raise AssertionError("not used here")

    @property
    def n_tokens(self) -> int:
        return 0 if self._rows[0][2] is None else int(self._rows[0][2].numel())

    def bytes_split(self) -> tuple[int, int]:
        return 0, 0


def test_a_policy_with_only_the_abstract_methods_runs_on_the_defaults() -> None:
    bare = _BareCache(2)
    assert not bare.rope_at_read and not bare.holds_latent and bare.record_layer == 0 and bare.head_rows() is None
    model = load(FAMILY_SPECS["llama-gqa"]).model
    ids = torch.tensor([[5, 17, 42, 7, 99]])
    caches = (bare, KVCache(2))
    first = [model(ids, torch.arange(5), c, last_only=True).logits for c in caches]
    step = [model(torch.tensor([[3]]), torch.tensor([5]), c).logits for c in caches]
    assert torch.equal(first[0], first[1]) and torch.equal(step[0], step[1])


class _OneByOne(PackedBatch):
    """Each packed sequence attends through its own cache (what ``kvsim.serving.batching`` does through blocks)."""

    def __init__(self, caches: list[Cache], bounds: list[tuple[int, int]]) -> None:
        self.caches, self.bounds = caches, bounds

    def attend_packed(self, attention: SequenceAttention, layer, q, k, v, positions):
        out = [
            attention.attend(q[:, :, s:e], k[:, :, s:e], v[:, :, s:e], positions[s:e], c, layer)
            for c, (s, e) in zip(self.caches, self.bounds, strict=True)
        ]
        return torch.cat(out, 1)


def test_a_packed_batch_is_told_apart_by_its_type() -> None:
    assert not issubclass(PackedBatch, Cache)  # no cache methods that would raise: it holds nothing
    model = load(FAMILY_SPECS["llama-gqa"]).model
    a, b = [5, 17, 42], [7, 99]
    packed = _OneByOne([KVCache(2), KVCache(2)], [(0, 3), (3, 5)])
    out = model(torch.tensor([a + b]), torch.tensor([0, 1, 2, 0, 1]), packed, rows=torch.tensor([2, 4])).logits
    alone = [model(torch.tensor([s]), torch.arange(len(s)), KVCache(2), last_only=True).logits[0, -1] for s in (a, b)]
    torch.testing.assert_close(out[0, 0], alone[0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out[0, 1], alone[1], rtol=1e-5, atol=1e-5)
