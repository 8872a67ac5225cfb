"""benchmarks/quality/long_prompt.py's fact rows: which layers still hold the answer's rows, and where a
layer's own window (Gemma 3's local layers) already hides them. A random Gemma-3-shaped model (2 local
layers of window 8, then a global one), a few tokens: no real model, no timing."""

from __future__ import annotations

import importlib.util
import sys

from helpers import ROOT, load

SPEC = "random:family=gemma3,layers=3,heads=2,kv_heads=1,dim=32,vocab=300,window=8,global_every=3,ctx=64,seed=7"


def _long_prompt():
    path = ROOT / "benchmarks" / "quality" / "long_prompt.py"
    spec = importlib.util.spec_from_file_location("bench_long_prompt", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_fact_rows_says_where_the_local_window_hides_what_a_lane_holds():
    bench = _long_prompt()
    model = load(SPEC).model
    assert [model.cfg.window_of(i) for i in range(3)] == [8, 8, None]
    fact = [2, 3]  # the query at q reads the key at k on a local layer only if k > q - 8 (visibility)
    masked = "; held only outside the layer's own window (masked) in [0, 1]"
    expected = {  # (rows before the next query, lane): the line
        (10, "kv:full"): "all 2 in layers [2]; some in [0, 1]; none in 0 of 3 layers",  # q = 10 reads 3, not 2
        (10, "kv"): "all 2 in layers [2]; some in [0, 1]; none in 0 of 3 layers",  # its strip: 2 … 9
        (11, "kv:full"): "all 2 in layers [2]; some in -; none in 0 of 3 layers" + masked,
        (11, "kv"): "all 2 in layers [2]; some in -; none in 0 of 3 layers" + masked,  # 3 … 10: 3 is held, unread
        (12, "kv:full"): "all 2 in layers [2]; some in -; none in 0 of 3 layers" + masked,
        (12, "kv"): "all 2 in layers [2]; some in -; none in 2 of 3 layers",  # 4 … 11: gone from the local layers
    }
    for (n, spec), line in expected.items():
        lane = bench.Lane(model, spec)
        lane.feed(list(range(5, 5 + n)))
        assert bench.fact_rows(lane.cache, model.cfg, fact, lane.n) == line, (n, spec)
    lane = bench.Lane(model, "window:4")
    lane.feed(list(range(5, 15)))
    assert bench.fact_rows(lane.cache, model.cfg, fact, lane.n) == "all 2 in layers -; some in -; none in 3 of 3 layers"


def test_answer_positions_spell_the_answer_where_it_first_appears():
    bench = _long_prompt()
    tok = load(SPEC).tokenizer
    ids = tok.encode("The code is 4817. Later: 4817 again.")
    at = bench.answer_positions(tok, ids, "4817")
    assert "4817" in tok.decode([ids[i] for i in at])
    assert "4817" not in tok.decode(ids[: at[-1]]) and "4817" not in tok.decode(ids[at[0] + 1 : at[-1] + 1])
