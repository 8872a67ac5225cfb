"""Lanes that load a copy of the model (issue 36): ``spec:K:model:NAME`` lanes on the same draft model load it
once and share it; the bytes of every copy (each ``@w…`` format, each draft model) are planned before any is
made and checked against the memory free, refused in one line otherwise (``kvsim run`` exits 2, as for other
refusals); the plan is the copies' real size (``quantized_bytes`` against the quantized model's bytes)."""

from __future__ import annotations

import pytest

from kvsim.caches import blocks
from kvsim.caches.registry import make_cache, parse_lanes
from kvsim.cli.entry import main
from kvsim.core.sampling import SimulationError
from kvsim.engine import model_side
from kvsim.engine.lane import Lane
from kvsim.engine.simulate import Simulator
from kvsim.models import loading
from kvsim.models.kernels.quantized_weights import quantize_model, quantized_bytes, weight_bytes

SMALL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=32,vocab=300,ctx=64,seed=0"


def _count_loads(monkeypatch) -> list[str]:
    """Every ``load_model`` call from now on, by name (the draft loader imports it at each call)."""
    calls: list[str] = []
    real = loading.load_model

    def counted(spec: str, *args, **kwargs):
        calls.append(spec)
        return real(spec, *args, **kwargs)

    monkeypatch.setattr(loading, "load_model", counted)
    return calls


def test_spec_lanes_on_one_draft_model_load_it_once(monkeypatch, tiny) -> None:
    calls = _count_loads(monkeypatch)
    lanes = parse_lanes("kv,spec:2:model:tiny,spec:3:model:tiny,spec:4:model:tiny,kv@w8,spec:2:lookup")
    sim = Simulator(tiny.model, tiny.tokenizer, [5, 6, 7, 5, 6, 7], lanes)
    assert calls == ["tiny"]  # one load for the three lanes
    drafters = [lane.driver.drafter for lane in sim.lanes[1:4]]
    assert len({id(d.model) for d in drafters}) == 1  # one model shared...
    assert len({id(d.cache) for d in drafters}) == 3  # ...each lane over its own KV cache
    records = list(sim.run(4, stop_at_eos=False))
    for name in ("spec:2:model:tiny", "spec:3:model:tiny", "spec:4:model:tiny"):
        assert all(r.lane(name).token_id == r.token_id for r in records)  # greedy: the target's own tokens


def test_the_plan_is_the_copies_real_size(tiny) -> None:
    model = tiny.model
    for bits, group, head, kind in ((8, None, True, None), (8, 64, True, None), (4, 32, True, None), (4, 64, False, None)) + (
        (8, 32, True, "Q8_0"),
        (8, 32, False, "Q8_0"),
    ):
        made = quantize_model(model, bits, group, head, blocks=kind)
        assert quantized_bytes(model, bits, group, head, blocks=kind) == weight_bytes(made)["quantized"]
    specs = parse_lanes("kv@w8,int4@w8,kv@w4:g64,spec:2:model:tiny,spec:3:model:tiny,spec:2:model:nope")
    lanes = [Lane(s, make_cache(s, model.cfg.n_layers)) for s in specs]
    plan = dict(model_side.plan_copies(lanes, model))
    assert list(plan) == ["@w8", "@w4:g64", "model:tiny", "model:nope"]  # one entry per copy, shared ones once
    assert plan["@w8"] == quantized_bytes(model, 8, 32, blocks="Q8_0")  # plain w8: llama.cpp's Q8_0 blocks
    assert plan["model:tiny"] == sum(p.numel() * p.element_size() for p in model.parameters())
    assert plan["model:nope"] is None  # not known before loading: the load says what is wrong


def test_copies_over_the_memory_free_are_refused_before_any_is_made(monkeypatch, tiny) -> None:
    calls = _count_loads(monkeypatch)
    made: list[object] = []
    monkeypatch.setattr(model_side, "quantize_model", lambda *a, **k: made.append(a) or a[0])
    w8 = quantized_bytes(tiny.model, 8, 32, blocks="Q8_0")
    need = w8 + quantized_bytes(tiny.model, 4, 32) + weight_bytes(tiny.model)["total"]
    monkeypatch.setattr(blocks, "available_memory", lambda: need)  # the copies would take all of it
    lanes = parse_lanes("kv,kv@w8,kv@w4,spec:2:model:tiny,spec:4:model:tiny")
    with pytest.raises(SimulationError) as info:
        Simulator(tiny.model, tiny.tokenizer, [1, 2, 3], lanes)
    text = str(info.value)
    assert "\n" not in text and "model copies need" in text and "@w8" in text and "model:tiny" in text
    assert calls == [] and made == []  # nothing loaded, nothing quantized
    monkeypatch.setattr(blocks, "available_memory", lambda: 4 * need)  # room: the run is made
    Simulator(tiny.model, tiny.tokenizer, [1, 2, 3], lanes)
    assert calls == ["tiny"] and len(made) == 2
    monkeypatch.setattr(blocks, "available_memory", lambda: None)  # unknown: nothing refused
    Simulator(tiny.model, tiny.tokenizer, [1, 2, 3], lanes)


def test_kvsim_run_refuses_copies_over_the_memory_free_in_one_line(monkeypatch, capsys) -> None:
    monkeypatch.setattr(blocks, "available_memory", lambda: 10_000)
    args = ["run", "--model", SMALL, "--prompt-ids", "3,4,5", "--steps", "2", "--lanes", "kv,kv@w8,kv@w4:g16"]
    assert main(args) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: the lanes' model copies need "), captured.err
    assert "Traceback" not in captured.err and captured.out == ""
    monkeypatch.setattr(blocks, "available_memory", lambda: 10**12)
    assert main(args) == 0
