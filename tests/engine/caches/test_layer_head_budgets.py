"""Budgets per layer and per head — ``pyramid:B:wW`` (PyramidKV), ``adakv:B:wW`` (Ada-KV on SnapKV's
scores) and ``duo:P:sS:wW`` (DuoAttention, its head split measured on the prompt) — against an independent
reference written here from the papers' definitions.

The reference runs the same random Llama (3 layers, GQA: 4 query heads on 2 KV heads) with its own
plain attention (loops over the rows each KV head keeps, ``softmax(q·k/√d)`` of a list), holds K/V in
dicts by position and chooses rows with Python lists, ``sorted`` and exact fractions. At every step the
lane must keep exactly the rows the reference keeps (every layer and KV head), give logits within 1e-5
of the reference's, and its bill must equal the bytes the simulator recorded.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch
from test_attention_eviction import _rope  # the reference's RoPE, one copy

from kvsim.caches import SpecError, make_cache, parse_spec
from kvsim.engine.simulate import Simulator, parse_lanes
from kvsim.models.loading import load_model

LLAMA = "random:family=llama,layers=3,heads=4,kv_heads=2,dim=32,vocab=300,ctx=256,seed=7"  # head_dim 8, g = 2
DECODE = 6


# ------------------------------------------------------------------------------------ the reference
def pyramid_reference(budget: int, window: int, layers: int, prompt: int) -> list[int]:
    """PyramidKV's layer budgets from the paper and the authors' code: the top layer keeps (B − W)/β rows
    (β = 20, rounded down), the bottom 2(B − W) − top (capped at the prompt, the top raised to keep the
    mean), a straight line between; the exact line's shares rounded by the largest remainder, lower
    layer first, so that the layers keep B·L rows."""
    if prompt <= budget:
        return [prompt] * layers
    mean = budget - window
    top = mean // 20
    bottom = min(2 * mean - top, prompt - window)
    top = 2 * mean - bottom
    if layers == 1:
        return [budget]
    share = [Fraction(bottom) - Fraction(layer * (bottom - top), layers - 1) for layer in range(layers)]
    rows = [math.floor(s) for s in share]
    for layer in sorted(range(layers), key=lambda i: (-(share[i] - rows[i]), i))[: mean * layers - sum(rows)]:
        rows[layer] += 1
    return [window + r for r in rows]


class Reference:
    def __init__(self, model, policy: dict) -> None:
        self.model, self.cfg, self.policy = model, model.cfg, policy
        L, hkv = self.cfg.n_layers, self.cfg.n_kv_heads
        self.k: list[dict[int, torch.Tensor]] = [{} for _ in range(L)]
        self.v: list[dict[int, torch.Tensor]] = [{} for _ in range(L)]
        self.kept: list[list[list[int]]] = [[[] for _ in range(hkv)] for _ in range(L)]
        self.lost: list[list[float]] = [[] for _ in range(L)]  # duo: each head's measure at the prefill
        self.retrieval: set[tuple[int, int]] | None = None  # duo: the (layer, head) kept whole

    @torch.no_grad()
    def forward(self, ids: list[int], positions: list[int]) -> torch.Tensor:
        cfg, m = self.cfg, self.model
        h, hkv, d, g = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.group_size
        x = m.tok_embeddings(torch.tensor([ids]))[0]
        for layer, block in enumerate(m.layers):
            a = block.attn
            xn = block.attn_norm(x)
            q, k, v = a.wq(xn).view(-1, h, d), a.wk(xn).view(-1, hkv, d), a.wv(xn).view(-1, hkv, d)
            for t, p in enumerate(positions):
                self.k[layer][p] = torch.stack([_rope(k[t, j], p, cfg.rope_theta) for j in range(hkv)])
                self.v[layer][p] = v[t]
            rows = [self.kept[layer][j] + positions for j in range(hkv)]
            observed = [dict.fromkeys(rows[j], 0.0) for j in range(hkv)]  # the window's attention, per KV head
            lost = [0.0] * hkv  # duo: the mass outside sinks + window, summed over the group's heads and the queries
            y = torch.zeros(len(positions), h * d)
            for head in range(h):
                j = head // g
                for t, p in enumerate(positions):
                    qv = _rope(q[t, head], p, cfg.rope_theta)
                    seen = [r for r in rows[j] if r <= p]
                    w = torch.softmax(torch.stack([(qv * self.k[layer][r][j]).sum() / math.sqrt(d) for r in seen]), 0)
                    if t >= len(positions) - self.policy["window"]:
                        for i, r in enumerate(seen):
                            observed[j][r] += float(w[i])
                    if self.policy["kind"] == "duo":
                        sinks, window = self.policy["sinks"], self.policy["window"]
                        lost[j] += sum(float(w[i]) for i, r in enumerate(seen) if not (r < sinks or r >= p - window))
                    y[t, head * d : (head + 1) * d] = sum(w[i] * self.v[layer][r][j] for i, r in enumerate(seen))
            x = x + a.wo(y)
            x = x + block.mlp(block.mlp_norm(x))
            first = not self.kept[layer][0]
            self.kept[layer] = rows
            if self.policy["kind"] == "duo":
                if first:
                    self.lost[layer] = [x / (g * len(positions)) for x in lost]
                else:
                    self._stream(layer)
            elif first and len(positions) > self.policy["budget"]:
                self._compress(layer, positions, observed)
        if self.policy["kind"] == "duo" and self.retrieval is None:  # the split, once every layer is measured
            heads = [(layer, j) for layer in range(cfg.n_layers) for j in range(hkv)]
            count = math.floor(self.policy["percent"] / 100 * len(heads) + 0.5)
            ranked = sorted(heads, key=lambda lj: (-self.lost[lj[0]][lj[1]], lj[0], lj[1]))
            self.retrieval = set(ranked[:count])
            for layer in range(cfg.n_layers):
                self._stream(layer)
        return m.lm_head(m.norm(x))[-1]

    def _stream(self, layer: int) -> None:
        """DuoAttention's streaming heads keep the first S positions and the W newest."""
        sinks, window = self.policy["sinks"], self.policy["window"]
        for j, rows in enumerate(self.kept[layer]):
            if (layer, j) not in self.retrieval:
                self.kept[layer][j] = [r for r in rows if r < sinks or r > max(rows) - window]

    def _compress(self, layer: int, prompt: list[int], observed: list[dict[int, float]]) -> None:
        budget, w, hkv = self.policy["budget"], self.policy["window"], self.cfg.n_kv_heads
        prefix = prompt[:-w]
        pooled = []  # SnapKV's scores: average pool, kernel 5, zeros padded
        for j in range(hkv):
            obs = [observed[j][r] for r in prefix]
            pooled.append({r: sum(obs[c] for c in range(i - 2, i + 3) if 0 <= c < len(prefix)) / 5 for i, r in enumerate(prefix)})
        if self.policy["kind"] == "pyramid":  # each head keeps its layer's count, its own best rows
            keep = pyramid_reference(budget, w, self.cfg.n_layers, len(prompt))[layer] - w
            chosen = [sorted(sorted(prefix, key=lambda r, j=j: (-pooled[j][r], r))[:keep]) for j in range(hkv)]
        else:  # adakv: each head's ⌊0.2·(B − W)⌋ best, then the layer's best over all heads
            safe = int((budget - w) * 0.2)
            guarded = {(j, r) for j in range(hkv) for r in sorted(prefix, key=lambda r, j=j: (-pooled[j][r], r))[:safe]}
            flat = sorted(
                ((j, r) for j in range(hkv) for r in prefix),
                key=lambda jr: (-(math.inf if jr in guarded else pooled[jr[0]][jr[1]]), jr[0], jr[1]),
            )
            picked = set(flat[: hkv * (budget - w)])
            chosen = [[r for r in prefix if (j, r) in picked] for j in range(hkv)]
        self.kept[layer] = [chosen[j] + prompt[-w:] for j in range(hkv)]


def _kept(cache, layer: int) -> list[list[int]]:
    if hasattr(cache, "kept_positions"):
        return cache.kept_positions(layer)
    return cache.held_rows(layer)[2].tolist()


def _run(spec: str, policy: dict, prompt: int) -> list[list[list[int]]]:
    lm = load_model(LLAMA)
    model = lm.model
    ids = torch.randint(0, 300, (prompt + DECODE,), generator=torch.Generator().manual_seed(11)).tolist()
    cache = make_cache(spec, model.cfg.n_layers)
    ref = Reference(model, policy)
    done, after_prompt = 0, []
    for n in [prompt] + list(range(prompt + 1, prompt + DECODE + 1)):
        positions = list(range(done, n))
        out = model(torch.tensor([ids[done:n]]), torch.tensor(positions), cache, last_only=True)
        want = ref.forward(ids[done:n], positions)
        assert float((out.logits[0, -1] - want).abs().max()) < 1e-5, f"{spec}: logits differ at n={n}"
        for layer in range(model.cfg.n_layers):
            assert _kept(cache, layer) == ref.kept[layer], f"{spec}: rows kept differ at n={n}, layer {layer}"
        if n == prompt:
            after_prompt = [[list(h) for h in layer] for layer in ref.kept]
        done = n
    return after_prompt


# ------------------------------------------------------------------------------------ pyramid
def test_pyramid_budgets_fall_with_depth_and_sum_to_b_per_layer() -> None:
    from kvsim.caches.pyramid import pyramid_budgets

    for budget, window, layers, prompt in [
        (12, 4, 3, 23),
        (12, 4, 3, 14),
        (64, 32, 30, 500),
        (64, 8, 30, 100),
        (96, 16, 7, 4000),
    ]:
        got = pyramid_budgets(budget, window, layers, prompt)
        assert got == pyramid_reference(budget, window, layers, prompt)
        assert sum(got) == budget * layers and got == sorted(got, reverse=True) and max(got) <= prompt
    assert pyramid_budgets(64, 32, 30, 500)[-1] == 32 + 32 // 20  # the top layer: its window and (B − W)/β
    assert pyramid_budgets(12, 4, 3, 10) == [10] * 3  # a prompt of at most B is kept whole


@pytest.mark.parametrize("prompt", [23, 14])  # the line from 16 down to 0; capped at the prompt: 10 down to 6
def test_pyramid_keeps_the_papers_rows_at_every_step(prompt: int) -> None:
    kept = _run("pyramid:12:w4", {"kind": "pyramid", "budget": 12, "window": 4}, prompt)
    counts = [len(layer[0]) for layer in kept]
    assert counts == pyramid_reference(12, 4, 3, prompt) and counts[0] > counts[-1]


# ------------------------------------------------------------------------------------ adakv
def test_adakv_keeps_the_papers_rows_at_every_step_and_heads_differ() -> None:
    kept = _run("adakv:10:w3", {"kind": "adakv", "budget": 10, "window": 3}, 23)
    counts = [[len(head) for head in layer] for layer in kept]
    assert all(sum(layer) == 2 * 10 for layer in counts)  # the layer's total is SnapKV's
    assert any(layer[0] != layer[1] for layer in counts)  # …split unevenly across its heads


def test_adakv_safeguard_and_split() -> None:
    from kvsim.caches.adakv import head_choice

    scores = torch.tensor([[9.0, 8.0, 7.0, 6.0], [0.1, 0.2, 0.0, 0.3]])
    assert head_choice(scores, 2, 0).tolist() == [[True] * 4, [False] * 4]  # the focused head takes all 4
    assert head_choice(scores, 2, 1).tolist() == [[True, True, True, False], [False, False, False, True]]


def test_bills_equal_the_recorded_bytes_every_step() -> None:
    from kvsim.costs.memory import lane_bill

    lm = load_model(LLAMA)
    prompt = list(range(1, 24))
    lanes = parse_lanes("snapkv:10:w3,pyramid:10:w3,adakv:10:w3")
    sim = Simulator(lm.model, lm.tokenizer, prompt, lanes, warmup=False)
    for step in range(4):
        record = sim.step()
        for lane, done in zip(sim.trace.meta["lanes"], record.lanes, strict=True):
            bill = lane_bill(lane, 3, 2, 8, len(prompt) + step, done.kv_positions, prompt_tokens=len(prompt))
            assert bill is not None and bill.expected_bytes == done.cache_bytes, (step, lane["name"])
        snap, pyr, ada = (record.lane(n) for n in ("snapkv:10:w3", "pyramid:10:w3", "adakv:10:w3"))
        assert snap.cache_bytes == pyr.cache_bytes == ada.cache_bytes  # the same total, split differently
        if step:  # a decode step read fewer rows than the sequence has; the spans end at the newest (no padding)
            assert all(s is not None and s[-1][1] == record.n_tokens for s in (pyr.spans, ada.spans))


# ------------------------------------------------------------------------------------ duo
def test_duo_keeps_the_rows_of_its_split_at_every_step() -> None:
    lm = load_model(LLAMA)
    ids = torch.randint(0, 300, (23 + DECODE,), generator=torch.Generator().manual_seed(11)).tolist()
    cache = make_cache("duo:50:s2:w5", 3)
    ref = Reference(lm.model, {"kind": "duo", "percent": 50, "sinks": 2, "window": 5, "budget": 0})
    done = 0
    for n in [23] + list(range(24, 23 + DECODE + 1)):
        positions = list(range(done, n))
        out = lm.model(torch.tensor([ids[done:n]]), torch.tensor(positions), cache, last_only=True)
        want = ref.forward(ids[done:n], positions)
        assert float((out.logits[0, -1] - want).abs().max()) < 1e-5, f"duo: logits differ at n={n}"
        assert [_kept(cache, layer) for layer in range(3)] == ref.kept, f"duo: rows kept differ at n={n}"
        done = n
    split = cache.retrieval_heads()
    assert split is not None and {(i, j) for i, j in split.nonzero().tolist()} == ref.retrieval and int(split.sum()) == 3
    for layer in range(3):  # a streaming head: 2 sinks and the 5 newest; a retrieval head: every row
        for j, rows in enumerate(_kept(cache, layer)):
            assert rows == (list(range(done)) if (layer, j) in ref.retrieval else [0, 1, *range(done - 5, done)])


def test_duo_bill_and_spec() -> None:
    from kvsim.costs.memory import lane_bill

    lm = load_model(LLAMA)
    sim = Simulator(lm.model, lm.tokenizer, list(range(1, 15)), parse_lanes("duo:34:s2:w4,duo:0:s0:w3"), warmup=False)
    for step in range(4):
        record = sim.step()
        for lane, done in zip(sim.trace.meta["lanes"], record.lanes, strict=True):
            bill = lane_bill(lane, 3, 2, 8, 14 + step, done.kv_positions)
            assert bill is not None and bill.expected_bytes == done.cache_bytes, (step, lane["name"])
    assert bill.why_values["retrieval"] == 0 and record.lane("duo:0:s0:w3").cache_bytes == 6 * 3 * 2 * 8 * 4
    assert lane_bill(sim.trace.meta["lanes"][0], 3, 2, 8, 20, 1).why_values["retrieval"] == 2  # 34 % of 6, rounded
    assert make_cache("duo:50", 2).describe().spec == "duo:50:s4:w64"
    with pytest.raises(SpecError, match="percentage"):
        parse_spec("duo:101")


@pytest.mark.parametrize("spec", ["pyramid:8:w3", "adakv:8:w3", "duo:50:s1:w3"])
def test_a_cancelled_step_is_undone_exactly(spec: str) -> None:
    model = load_model(LLAMA).model
    cache = make_cache(spec, 3)
    model(torch.arange(1, 15)[None], torch.arange(14), cache)
    earlier = []
    for n in range(14, 16):
        earlier = [_kept(cache, layer) for layer in range(3)]  # what it held before the step at n
        model(torch.tensor([[n]]), torch.tensor([n]), cache)
    before = [_kept(cache, layer) for layer in range(3)]
    nbytes = cache.nbytes

    def stop(done: int, total: int) -> None:
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        model(torch.tensor([[3]]), torch.tensor([16]), cache, layer_hook=stop)
    cache.truncate(16)
    assert [_kept(cache, layer) for layer in range(3)] == before and cache.nbytes == nbytes
    cache.truncate(15)  # a second step back: rows at 15 dropped (one step is undone exactly, as ScoredCache)
    if spec.startswith("duo"):  # a streaming head's rows evicted by the step at 15 are gone, as in a window
        assert all(max(h) == 14 for layer in range(3) for h in _kept(cache, layer))
    else:  # nothing was evicted after the prefill: exactly what it held before the step at 15
        assert [_kept(cache, layer) for layer in range(3)] == earlier


@pytest.mark.parametrize(
    "spec, message",
    [
        ("pyramid", "pyramid needs B"),
        ("pyramid:8:w9", "larger than its budget"),
        ("adakv:x", "adakv:B must be a whole number"),
        ("adakv:8:k3", "adakv takes B and then wW"),
    ],
)
def test_bad_specs_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_spec(spec)


def test_words() -> None:
    assert make_cache("pyramid:64", 2).describe().spec == "pyramid:64:w32"
    info = make_cache("adakv:64:w16", 2).describe()
    assert info.spec == "adakv:64:w16" and info.evicts and "at least 9" in info.explanation  # ⌊0.2·48⌋
