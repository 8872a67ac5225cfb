"""Eviction by attention — ``h2o:B:rR``, ``tova:B``, ``snapkv:B:wW`` — against an independent reference
written here from the papers' definitions.

The reference runs the same random Llama (GQA: 4 query heads on 2 KV heads) with its own plain
attention: for each layer and query head, a loop over the rows its KV head keeps, ``softmax(q·k/√d)``
of a plain list, the weighted sum of V. Its K/V rows are computed once per position from its own
past and held in dicts by position; its policies are written from the papers with Python lists and
``sorted`` (ties to the older row). At every step the lane must keep exactly the rows the reference
keeps (every layer and KV head) and give logits within 1e-5 of the reference's attention over
exactly those rows.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from kvsim.caches import SpecError, make_cache, parse_spec
from kvsim.engine.simulate import Simulator, parse_lanes
from kvsim.engine.trace import Trace
from kvsim.engine.trace_checks import TraceError
from kvsim.models.loading import load_model

LLAMA = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=32,vocab=300,ctx=256,seed=7"  # head_dim 8, g = 2
PROMPT = 23
DECODE = 18


# ------------------------------------------------------------------------------------ the reference
def _rope(x: torch.Tensor, pos: int, theta: float) -> torch.Tensor:
    """x (D,) rotated to position ``pos``: pairs (i, i + D/2) by angle pos · theta^(-2i/D)."""
    d = x.shape[0]
    half = d // 2
    out = x.clone()
    for i in range(half):
        angle = pos * theta ** (-2 * i / d)
        c, s = math.cos(angle), math.sin(angle)
        out[i] = x[i] * c - x[i + half] * s
        out[i + half] = x[i + half] * c + x[i] * s
    return out


class Reference:
    """The model's own weights, attention written as loops; ``policy`` picks the rows kept."""

    def __init__(self, model, policy: dict) -> None:
        self.model, self.cfg, self.policy = model, model.cfg, policy
        L, hkv = self.cfg.n_layers, self.cfg.n_kv_heads
        self.k: list[dict[int, torch.Tensor]] = [{} for _ in range(L)]  # layer → position → (H_kv, D)
        self.v: list[dict[int, torch.Tensor]] = [{} for _ in range(L)]
        self.kept: list[list[list[int]]] = [[[] for _ in range(hkv)] for _ in range(L)]  # positions per head
        self.score: list[list[dict[int, float]]] = [[{} for _ in range(hkv)] for _ in range(L)]

    @torch.no_grad()
    def forward(self, ids: list[int], positions: list[int]) -> torch.Tensor:
        cfg, m = self.cfg, self.model
        h, hkv, d, g = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.group_size
        x = m.tok_embeddings(torch.tensor([ids]))[0]  # (T, dim)
        for layer, block in enumerate(m.layers):
            a = block.attn
            xn = block.attn_norm(x)
            q, k, v = a.wq(xn).view(-1, h, d), a.wk(xn).view(-1, hkv, d), a.wv(xn).view(-1, hkv, d)
            for t, p in enumerate(positions):
                self.k[layer][p] = torch.stack([_rope(k[t, j], p, cfg.rope_theta) for j in range(hkv)])
                self.v[layer][p] = v[t]
            rows = [self.kept[layer][j] + positions for j in range(hkv)]  # each KV head's rows read this step
            probs = [[[None] * len(positions) for _ in range(g)] for _ in range(hkv)]  # [kv][group][query] → {pos: p}
            y = torch.zeros(len(positions), h * d)
            for head in range(h):
                j = head // g
                for t, p in enumerate(positions):
                    qv = _rope(q[t, head], p, cfg.rope_theta)
                    seen = [r for r in rows[j] if r <= p]
                    logits = torch.stack([(qv * self.k[layer][r][j]).sum() / math.sqrt(d) for r in seen])
                    w = torch.softmax(logits, 0)
                    probs[j][head % g][t] = dict(zip(seen, w.tolist(), strict=True))
                    y[t, head * d : (head + 1) * d] = sum(w[i] * self.v[layer][r][j] for i, r in enumerate(seen))
            x = x + a.wo(y)
            x = x + block.mlp(block.mlp_norm(x))
            self._evict(layer, rows, probs, first=not self.kept[layer][0])
        return m.lm_head(m.norm(x))[-1]

    def _evict(self, layer: int, rows: list[list[int]], probs, first: bool) -> None:
        kind, hkv = self.policy["kind"], self.cfg.n_kv_heads
        older = lambda scores: lambda r: (-scores[r], r)  # noqa: E731 - highest first, ties to the older row
        if kind == "tova":  # one ranking per layer: the last query's attention, averaged over every query head
            mean = {r: sum(probs[j][gi][-1].get(r, 0.0) for j in range(hkv) for gi in range(len(probs[j]))) for r in rows[0]}
            keep = sorted(rows[0], key=older(mean))[: self.policy["budget"]]
            for j in range(hkv):
                self.kept[layer][j] = sorted(keep)
            return
        for j in range(hkv):
            got: dict[int, float] = {r: 0.0 for r in rows[j]}
            for per_query in probs[j]:
                for row_probs in per_query:
                    for r, p in row_probs.items():
                        got[r] += p
            if kind == "h2o":  # accumulated attention; keep R newest and the B highest of the rest
                score = self.score[layer][j]
                score.update({r: score.get(r, 0.0) + got[r] for r in rows[j]})
                heavy, recent = self.policy["heavy"], self.policy["recent"]
                keep = rows[j]
                if len(keep) > heavy + recent:
                    old, new = keep[: len(keep) - recent], keep[len(keep) - recent :]
                    keep = sorted(sorted(old, key=older(score))[:heavy]) + new
                self.kept[layer][j] = keep
                self.score[layer][j] = {r: score[r] for r in keep}
            else:  # snapkv: once, at prefill: the last W queries' attention, average-pooled (5, zeros padded)
                budget, w = self.policy["budget"], self.policy["window"]
                keep = rows[j]
                if first and len(keep) > budget:
                    obs = [0.0] * len(keep)
                    for per_query in probs[j]:
                        for row_probs in per_query[-w:]:
                            for i, r in enumerate(keep):
                                obs[i] += row_probs.get(r, 0.0)
                    prefix = len(keep) - w
                    pooled = {keep[i]: sum(obs[c] for c in range(i - 2, i + 3) if 0 <= c < prefix) / 5 for i in range(prefix)}
                    keep = sorted(sorted(keep[:prefix], key=older(pooled))[: budget - w]) + keep[prefix:]
                self.kept[layer][j] = keep


def _run(spec: str, policy: dict, prompt: int = PROMPT, decode: int = DECODE) -> int:
    lm = load_model(LLAMA)
    model = lm.model
    gen = torch.Generator().manual_seed(11)
    ids = torch.randint(0, 300, (prompt + decode,), generator=gen).tolist()
    cache = make_cache(spec, model.cfg.n_layers)
    ref = Reference(model, policy)
    evicted_steps = 0
    done = 0
    for n in [prompt] + list(range(prompt + 1, prompt + decode + 1)):
        positions = list(range(done, n))
        out = model(torch.tensor([ids[done:n]]), torch.tensor(positions), cache, last_only=True)
        want = ref.forward(ids[done:n], positions)
        assert float((out.logits[0, -1] - want).abs().max()) < 1e-5, f"{spec}: logits differ at n={n}"
        for layer in range(model.cfg.n_layers):
            held = cache.held_rows(layer)[2]
            assert held.tolist() == ref.kept[layer], f"{spec}: rows kept differ at n={n}, layer {layer}"
        evicted_steps += int(len(ref.kept[0][0]) < n)
        done = n
    return evicted_steps


def test_h2o_keeps_the_heavy_hitters_and_the_recent_rows() -> None:
    steps = _run("h2o:6:r4", {"kind": "h2o", "heavy": 6, "recent": 4})
    assert steps == DECODE + 1  # the prompt (23) was already more than B + R = 10: every step evicted


def test_h2o_heads_choose_their_own_rows() -> None:
    lm = load_model(LLAMA)
    cache = make_cache("h2o:6:r4", 2)
    gen = torch.Generator().manual_seed(11)
    lm.model(torch.randint(0, 300, (1, 40), generator=gen), torch.arange(40), cache)
    pos = cache.held_rows(1)[2]
    assert pos.shape == (2, 10) and pos[:, -4:].tolist() == [[36, 37, 38, 39]] * 2  # R newest in every head
    assert any(pos[0].tolist() != pos[1].tolist() for layer in range(2) for pos in [cache.held_rows(layer)[2]])


def test_tova_drops_what_the_newest_query_reads_least() -> None:
    steps = _run("tova:12", {"kind": "tova", "budget": 12})
    assert steps == DECODE + 1


def test_snapkv_compresses_the_prompt_once_then_appends() -> None:
    _run("snapkv:12:w4", {"kind": "snapkv", "budget": 12, "window": 4})
    cache = make_cache("snapkv:12:w4", 2)
    lm = load_model(LLAMA)
    lm.model(torch.arange(1, 24)[None], torch.arange(23), cache)
    assert cache.n_tokens == 12 and cache.held_rows(0)[2][:, -4:].tolist() == [[19, 20, 21, 22]] * 2
    for n in range(23, 30):  # decode appends: nothing more is evicted
        lm.model(torch.tensor([[5]]), torch.tensor([n]), cache)
    assert cache.n_tokens == 12 + 7 and cache.held_rows(1)[2][:, -7:].tolist() == [list(range(23, 30))] * 2


def test_short_prompt_is_not_compressed_and_budgets_hold_in_records() -> None:
    lm = load_model(LLAMA)
    lanes = parse_lanes("kv,h2o:4:r4,tova:8,snapkv:16:w4")
    sim = Simulator(lm.model, lm.tokenizer, list(range(1, 11)), lanes)  # 10 prompt tokens: less than 16
    row = 2 * 2 * 8 * 4 * 2  # K and V × KV heads × head dim × fp32 × layers: one row, all layers
    for r in sim.run(12):
        n = r.n_tokens
        h2o, tova, snap = r.lane("h2o:4:r4"), r.lane("tova:8"), r.lane("snapkv:16:w4")
        assert (h2o.context, h2o.cache_tokens) == (min(n, 9) if r.step else n, min(n, 8))
        assert h2o.cache_bytes == min(n, 8) * row + min(n, 8) * 2 * 2 * 4  # + the float32 scores, per head and layer
        assert h2o.cache_overhead_bytes == min(n, 8) * 2 * 2 * 4
        assert (tova.cache_tokens, tova.cache_bytes, tova.cache_overhead_bytes) == (min(n, 8), min(n, 8) * row, 0)
        assert snap.cache_tokens == n and snap.spans is None  # a 10-token prompt under B = 16 stays whole
        if r.step:  # a decode step reads 9 of the n > 9 rows
            assert h2o.spans is not None and tova.spans is not None


def test_a_cancelled_step_is_undone_exactly(tmp_path) -> None:
    lm = load_model(LLAMA)
    model = lm.model
    for spec in ("h2o:5:r3", "tova:7", "snapkv:10:w3"):
        cache = make_cache(spec, 2)
        model(torch.arange(1, 15)[None], torch.arange(14), cache)
        for n in range(14, 17):
            model(torch.tensor([[n]]), torch.tensor([n]), cache)
        before = [tuple(x.clone() for x in cache.held_rows(layer)) for layer in range(2)]
        scores = [cache.row_scores(layer).clone() for layer in range(2)]

        def stop(done: int, total: int) -> None:
            if done == 2:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            model(torch.tensor([[3]]), torch.tensor([17]), cache, layer_hook=stop)
        cache.truncate(17)
        for layer in range(2):
            assert all(torch.equal(a, b) for a, b in zip(before[layer], cache.held_rows(layer), strict=True))
            assert torch.equal(scores[layer], cache.row_scores(layer))
    # a run with these lanes saves and loads (spans are the union of the heads' rows)
    sim = Simulator(model, lm.tokenizer, list(range(1, 30)), parse_lanes("kv,h2o:4:r4,tova:8,snapkv:12"))
    list(sim.run(5))
    sim.trace.save(tmp_path / "run.kvsim")
    again = Trace.load(tmp_path / "run.kvsim")
    assert [r.lane("h2o:4:r4").spans for r in again.records] == [r.lane("h2o:4:r4").spans for r in sim.trace.records]


@pytest.mark.parametrize(
    "spec, message",
    [
        ("h2o", "h2o needs B"),
        ("h2o:x", "h2o:B must be a whole number"),
        ("h2o:4:q3", "h2o takes B and then rR"),
        ("h2o:0:r0", "at least 1"),
        ("tova:0", "tova:B must be ≥ 1"),
        ("tova:4:5", "tova takes one parameter"),
        ("snapkv:8:w9", "larger than its budget"),
        ("snapkv:8:k3", "snapkv takes B and then wW"),
        # SnapKV's budget against impossible values, as every lane's: none, zero, negative, huge, not digits
        ("snapkv", "snapkv needs B"),
        ("snapkv:", "snapkv:B has no value"),
        ("snapkv:0", "snapkv:B must be ≥ 1"),
        ("snapkv:-3", "snapkv:B must be ≥ 1"),
        ("snapkv:99999999999", "too large"),
        ("snapkv:1e3", "must be a whole number"),
        ("snapkv:٣", "must be a whole number"),
        ("snapkv:8:w0", "snapkv:wW must be ≥ 1"),
        ("snapkv:8:w", "snapkv:wW has no value"),
        ("snapkv:8:w4:w2", "snapkv takes B and then wW"),
        ("snapkv:8:w99999999999", "too large"),
    ],
)
def test_bad_specs_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_spec(spec)


@pytest.mark.parametrize("spec", ["snapkv:0", "snapkv:8:w9", "snapkv:99999999999", "snapkv:8:w0"])
def test_kvsim_run_refuses_an_impossible_snapkv_budget_in_one_line(spec: str, capsys) -> None:
    from kvsim.cli.entry import main

    assert main(["run", "--model", LLAMA, "--prompt-ids", "1,2,3", "--steps", "1", "--lanes", f"kv,{spec}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and spec in err, err


def test_a_saved_run_with_impossible_lane_options_is_refused_in_one_line(tmp_path) -> None:
    """The options a saved run's lanes carry are what their grammar parsed: a budget of 0, a negative one, a window
    over the budget, text or a fraction where a count goes (in the options, or in the numbers the words show) are
    refused by ``Trace.load`` (so by ``kvsim inspect`` and the app's Open) in one line."""
    import hostile

    sim = Simulator(load_model(LLAMA).model, load_model(LLAMA).tokenizer, list(range(1, 12)), parse_lanes("kv,snapkv:4:w2"))
    list(sim.run(2))
    good = sim.trace.save(tmp_path / "good.kvsim")

    def options(**changes):
        return lambda m, a: m["meta"]["lanes"][1]["options"].update(changes)

    def words(**changes):
        return lambda m, a: m["meta"]["lanes"][1]["words"]["values"].update(changes)

    damages = {
        "budget-zero": options(budget=0),
        "budget-negative": options(budget=-5),
        "budget-huge": options(budget=10**12),
        "budget-fraction": options(budget=1.5),
        "budget-text": options(budget="\x1b[2J"),
        "window-zero": options(window=0),
        "window-over-budget": options(window=5),
        "unknown-text-option": options(shown="\x1b[31m"),
        "words-budget-negative": words(budget=-5),
        "words-window-zero": words(window=0),
        "options-not-an-object": lambda m, a: m["meta"]["lanes"][1].update(options=[4, 2]),
        "draft-unknown": lambda m, a: m["meta"]["lanes"][1]["options"].update(draft="\x1b[2J"),
    }
    for name, raw in hostile._damaged_copies(good, damages).items():
        path = tmp_path / f"{name}.kvsim"
        path.write_bytes(raw)
        with pytest.raises(TraceError) as info:
            Trace.load(path)
        text = str(info.value)
        assert "\n" not in text and "\x1b" not in text and "snapkv:4:w2" in text, (name, text)
    assert Trace.load(good).meta["lanes"][1]["options"] == {"budget": 4, "window": 2}


def test_defaults_and_words() -> None:
    assert make_cache("h2o:16", 1).describe().spec == "h2o:16:r16"  # R = B: the paper's even split
    assert make_cache("snapkv:64", 1).describe().spec == "snapkv:64:w32"  # the authors' window, 32
    assert make_cache("snapkv:8", 1).describe().spec == "snapkv:8:w8"  # …at most B
    for spec in ("h2o:16", "tova:16", "snapkv:16"):
        info = make_cache(spec, 1).describe()
        assert info.evicts and not info.lossy and info.reuses_past and info.window is None


def test_a_gemma3_model_runs_every_policy_and_other_lanes_are_unchanged() -> None:
    lm = load_model("random:family=gemma3,layers=6,heads=4,kv_heads=1,dim=64,vocab=300,window=8,seed=2")
    lanes = parse_lanes("kv,h2o:4:r4,tova:8,snapkv:8:w4")
    sim = Simulator(lm.model, lm.tokenizer, list(range(1, 20)), lanes)
    records = list(sim.run(6))
    assert all(np.isfinite(r.lane(name).logit_diff) for r in records for name in ("h2o:4:r4", "tova:8", "snapkv:8:w4"))
    assert records[-1].lane("kv").logit_diff == 0.0


def test_lane_bills_equal_the_live_bytes_every_step() -> None:
    """The memory dock's formula for each policy (H2O's scores as overhead, SnapKV's prompt cut once)
    equals what the caches report, before and after the budgets fill."""
    from kvsim.costs.memory import lane_bill
    from kvsim.ui.lanes.policy_text import why

    lm = load_model(LLAMA)
    cfg = lm.model.cfg
    prompt = list(range(1, 15))
    sim = Simulator(lm.model, lm.tokenizer, prompt, parse_lanes("kv,h2o:3:r6,tova:20,snapkv:9:w3"), warmup=False)
    for step in range(10):
        record = sim.step()
        for lane, done in zip(sim.trace.meta["lanes"], record.lanes, strict=True):
            bill = lane_bill(lane, 2, 2, 8, len(prompt) + step, done.kv_positions, prompt_tokens=len(prompt))
            assert bill.expected_bytes == done.cache_bytes, (step, lane["name"])
            assert (bill.expected_bytes > bill.formula_bytes) == (lane["policy"] == "h2o")
            if lane["policy"] == "h2o":
                assert why(bill) == bill.why and "+" in bill.why  # the English words pass through unchanged
                assert bill.why_values == {"overhead": 2 * 2 * min(len(prompt) + step, 9) * 4}  # L·H_kv·min(n, B+R)·4
    assert lane_bill(sim.trace.meta["lanes"][3], 2, 2, 8, 30, 1) is None  # snapkv needs the prompt's length
    assert cfg.n_kv_heads == 2
