"""``window:W`` and ``sink:S+window:W`` on real tensors, against independent references:

* Hugging Face ``transformers``' own sliding-window attention (a random Mistral checkpoint whose
  window is shorter than the sequence): the window lane's logits match it at every step, while the
  lane really holds only W rows; its bytes equal ``StaticCache``'s sliding layers and ``kvsim memory``;
* on a model without a window (random Llama): the keys read are exactly the window (and the sinks),
  memory plateaus, logits leave the exact cache's once the sequence outgrows the window, a cancelled
  step is undone bit for bit, and the app draws the lanes (evicted rows transparent, attention masked).
"""

from __future__ import annotations

import inspect
import json
import os

import numpy as np
import pytest
import torch
from helpers import cli_json_lines, load, ready_window

from kvsim.caches import KVCache, SpecError, make_cache, parse_spec
from kvsim.cli.entry import main
from kvsim.costs.memory import kv_cache_bytes
from kvsim.engine.simulate import Simulator, parse_lanes
from kvsim.models.loading import load_model

LLAMA = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=32,seed=3"  # head_dim 8, no window of its own
ROW_BYTES = 2 * 2 * 2 * 8 * 4  # K and V × layers × kv heads × head dim × fp32: one position, all layers


# ---------------------------------------------------------------------------------------------- specs
@pytest.mark.parametrize(
    "spec, message",
    [
        ("window", "window needs W"),
        ("window:", "window:W has no value"),
        ("window:abc", "window:W must be a whole number"),
        ("window:1.5", "window:W must be a whole number"),
        ("window:0", "window:W must be ≥ 1"),
        ("window:-3", "window:W must be ≥ 1"),
        ("window:4:5", "window takes one parameter"),
        ("window:9999999999", "too large"),
        ("sink:4+window", "window needs W"),
        ("sink:x+window:8", "sink:S must be a whole number"),
        ("sink:-1+window:8", "sink:S must be ≥ 0"),
        ("sink:4", "unknown lane 'sink:4'"),  # a sink needs its window: the error lists sink:S+window:W
    ],
)
def test_bad_specs_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(SpecError, match=message) as err:
        parse_spec(spec)
    assert ("sink:S+window:W" if spec.startswith("sink") else "window:W") in str(err.value)


def test_specs_and_descriptions() -> None:
    assert parse_spec("window:64").options == {"window": 64}
    assert parse_spec("Sink:4+Window:60").options == {"sinks": 4, "window": 60}
    assert parse_spec("sink:0+window:3").options == {"sinks": 0, "window": 3}
    info = make_cache("window:64", 2).describe()
    assert (info.spec, info.title, info.window, info.sinks) == ("window:64", "sliding window", 64, 0)
    assert info.evicts and info.reuses_past and not info.lossy and "last 64 rows" in info.explanation
    info = make_cache("sink:4+window:60", 2).describe()
    assert (info.spec, info.window, info.sinks, info.evicts) == ("sink:4+window:60", 60, 4, True)
    assert "first 4" in info.explanation and "last 60" in info.explanation
    cache = make_cache("sink:4+window:60", 2)
    assert (cache.mask_window, cache.mask_sinks) == (60, 4)  # what the model's attention mask applies


# ------------------------------------------------------------------- 1-2. against transformers' Mistral
WINDOW, PROMPT, STEPS = 8, 13, 24


@pytest.fixture(scope="module")
def mistral(tmp_path_factory):
    """(transformers MistralForCausalLM, kvsim LoadedModel): same random weights, sliding window 8."""
    transformers = pytest.importorskip("transformers")
    from test_parity_hf import _common, randomize, write_tokenizer

    cfg = transformers.MistralConfig(**_common(num_attention_heads=4, num_key_value_heads=2, sliding_window=WINDOW))
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    hf = transformers.MistralForCausalLM(cfg).eval()
    randomize(hf, seed=5)
    path = tmp_path_factory.mktemp("mistral-window")
    hf.save_pretrained(path, safe_serialization=True)
    write_tokenizer(path)
    hf = transformers.MistralForCausalLM.from_pretrained(path, attn_implementation="eager").eval()
    ours = load_model(str(path))
    assert ours.model.cfg.sliding_window == WINDOW
    return hf, ours


def test_window_lane_is_transformers_sliding_window_attention_holding_only_w_rows(mistral) -> None:
    from test_parity_hf import hf_step

    hf, ours = mistral
    model = ours.model
    cfg = model.cfg
    ids = torch.randint(1, cfg.vocab_size, (1, PROMPT), generator=torch.Generator().manual_seed(11))
    window, kv = make_cache(f"window:{WINDOW}", cfg.n_layers), KVCache(cfg.n_layers)
    row = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 4  # bytes of one position, all layers (fp32)

    ref, past = hf_step(hf, ids, None)
    got_w = model(ids, torch.arange(PROMPT), window, last_only=True).logits[0, -1]
    got_kv = model(ids, torch.arange(PROMPT), kv, last_only=True).logits[0, -1]
    worst_hf = worst_kv = 0.0
    token, n = int(ref[0, -1].argmax()), PROMPT
    for step in range(STEPS + 1):
        worst_hf = max(worst_hf, float((got_w - ref[0, -1]).abs().max()))
        worst_kv = max(worst_kv, float((got_w - got_kv).abs().max()))
        # the window lane holds the last W rows, the exact cache every row
        assert (window.n_tokens, window.nbytes) == (min(n, WINDOW), min(n, WINDOW) * row), step
        assert (kv.n_tokens, kv.nbytes) == (n, n * row)
        if step:
            assert window.key_positions(0).tolist() == list(range(n - WINDOW, n))  # reads exactly W keys
        if step == STEPS:
            break
        ref, past = hf_step(hf, torch.tensor([[token]]), past)
        pos = torch.tensor([n])
        got_w = model(torch.tensor([[token]]), pos, window, last_only=True).logits[0, -1]
        got_kv = model(torch.tensor([[token]]), pos, kv, last_only=True).logits[0, -1]
        token, n = int(ref[0, -1].argmax()), n + 1
    assert n == PROMPT + STEPS > 4 * WINDOW
    assert worst_hf <= 1e-4, f"window lane vs transformers: {worst_hf:.2e}"
    assert worst_kv <= 1e-4, f"window lane vs kv lane: {worst_kv:.2e}"


def test_window_lane_in_the_simulator_matches_the_kv_lane_on_a_windowed_model(mistral) -> None:
    _, ours = mistral
    lanes = parse_lanes(f"kv,window:{WINDOW},kv:full")
    sim = Simulator(ours.model, ours.tokenizer, list(range(1, PROMPT + 1)), lanes)
    for r in sim.run(STEPS):
        n = r.n_tokens
        kv, win, full = r.lane("kv"), r.lane(f"window:{WINDOW}"), r.lane("kv:full")
        assert win.token_id == kv.token_id == full.token_id == r.token_id and win.logit_diff <= 1e-4
        # kv honours the model's window on every layer, as transformers' DynamicCache does; kv:full keeps all
        assert (win.cache_tokens, kv.cache_tokens, full.cache_tokens) == (min(n, WINDOW), min(n, WINDOW), n)
        assert kv.cache_bytes == win.cache_bytes and full.logit_diff <= 1e-4
        assert win.first_key == kv.first_key == n - WINDOW
        if r.step:
            assert win.spans == ((n - WINDOW, n),) and win.context == WINDOW


def test_held_bytes_equal_transformers_static_sliding_window_cache_and_kvsim_memory(mistral, capsys) -> None:
    from transformers.cache_utils import StaticCache, StaticSlidingWindowLayer

    hf, ours = mistral
    cfg = ours.model.cfg
    context = PROMPT + 10
    static = StaticCache(config=hf.config, max_cache_len=context)
    assert all(isinstance(layer, StaticSlidingWindowLayer) for layer in static.layers)
    ids = torch.randint(1, cfg.vocab_size, (1, context), generator=torch.Generator().manual_seed(3))
    key = "cache" if "cache" in inspect.signature(hf.forward).parameters else "past_key_values"
    with torch.no_grad():
        hf(ids[:, :PROMPT], use_cache=True, **{key: static})
        for t in range(PROMPT, context):
            hf(
                ids[:, t : t + 1],
                use_cache=True,
                **{key: static},
                cache_position=torch.tensor([t]),
                position_ids=torch.tensor([[t]]),
            )
    hf_bytes = sum(x.numel() * x.element_size() for layer in static.layers for x in (layer.keys, layer.values))

    cache = make_cache(f"window:{WINDOW}", cfg.n_layers)
    ours.model(ids[:, :PROMPT], torch.arange(PROMPT), cache)
    for t in range(PROMPT, context):
        ours.model(ids[:, t : t + 1], torch.tensor([t]), cache)
    assert cache.bytes_split() == (hf_bytes, 0)
    formula = kv_cache_bytes(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, context, bits=32, window=WINDOW)
    assert cache.nbytes == formula == 2 * cfg.n_layers * WINDOW * cfg.n_kv_heads * cfg.head_dim * 4
    # the CLI's calculator (16-bit by default: it offers 16/8/4 bits, so fp32 is twice its figure)
    assert (
        main(
            [
                "memory",
                "--layers",
                str(cfg.n_layers),
                "--kv-heads",
                str(cfg.n_kv_heads),
                "--head-dim",
                str(cfg.head_dim),
                "--context",
                str(context),
                "--window",
                str(WINDOW),
                "--json",
            ]
        )
        == 0
    )
    assert 2 * json.loads(capsys.readouterr().out)["bytes"] == cache.nbytes


# ------------------------------------------------------------------------- 3. a model with no window
def _run_json(capsys, lanes: str, prompt_len: int, steps: int) -> list[dict]:
    prompt_ids = ",".join(map(str, range(10, 10 + prompt_len)))
    steps_out, _summary = cli_json_lines(
        capsys, "run", "--model", LLAMA, "--prompt-ids", prompt_ids, "--steps", str(steps), "--lanes", lanes, "--json"
    )
    return steps_out


def test_cli_spans_memory_and_the_lesson_on_a_model_without_a_window(capsys) -> None:
    W, S, P = 4, 2, 10
    steps = _run_json(capsys, f"kv,window:{W},sink:{S}+window:{W},window:16", P, 14)
    assert len(steps) == 14
    for s in steps:
        n = s["positions"][1] + 1
        win, sink, wide, kv = s[f"window:{W}"], s[f"sink:{S}+window:{W}"], s["window:16"], s["kv"]
        assert kv["cache_tokens"] == n and kv["logit_diff"] == 0 and "key_spans" not in kv
        assert (win["cache_tokens"], win["cache_bytes"]) == (W, W * ROW_BYTES)  # plateaued: P > W already
        assert (sink["cache_tokens"], sink["cache_bytes"]) == (S + W, (S + W) * ROW_BYTES)
        assert wide["cache_tokens"] == min(n, 16)
        if s["step"] == 0:  # the prefill read every prompt row (each query masked to its own window)
            assert "key_spans" not in win and "key_spans" not in sink and win["context"] == P
        else:
            assert win["key_spans"] == [[n - W, n]] and win["context"] == W
            assert sink["key_spans"] == [[0, S], [n - W, n]] and sink["context"] == S + W
        # the lesson: once the sequence outgrows the window, the logits are not the exact cache's
        assert win["logit_diff"] > 1e-3 and sink["logit_diff"] > 1e-3
        assert (wide["logit_diff"] > 1e-3) == (n > 16), (n, wide["logit_diff"])
        assert wide["logit_diff"] < 1e-4 or n > 16


def _held(cache) -> list[tuple[torch.Tensor, ...]]:
    return [tuple(t.clone() for t in cache.held_rows(layer)) for layer in range(cache.n_layers)]


@pytest.mark.parametrize("cancel_step", [0, 3, 9])  # the prefill, a decode before the strip wraps, one after
def test_a_cancelled_step_is_undone_bit_for_bit(cancel_step: int) -> None:
    loaded = load(LLAMA)
    lanes = parse_lanes("kv,window:3,sink:2+window:3")
    prompt = list(range(20, 29))
    plain = Simulator(loaded.model, loaded.tokenizer, prompt, lanes)
    expected = list(plain.run(12))
    armed = {"on": False}

    def progress(lane: str, done: int, total: int) -> None:
        # window:3 finishes its forward; the sink lane is cancelled after its first layer
        if armed["on"] and lane == "sink:2+window:3" and done == 1:
            raise KeyboardInterrupt

    sim = Simulator(loaded.model, loaded.tokenizer, prompt, lanes, progress=progress)
    caches = {lane.name: lane.cache for lane in sim.lanes if lane.name != "kv"}
    got = []
    for step in range(12):
        if step == cancel_step:
            before = {name: (_held(c) if c.n_tokens else None, c.n_tokens, c.nbytes) for name, c in caches.items()}
            armed["on"] = True
            with pytest.raises(KeyboardInterrupt):
                sim.step()
            armed["on"] = False
            for name, c in caches.items():
                held, n_tokens, nbytes = before[name]
                assert (c.n_tokens, c.nbytes) == (n_tokens, nbytes), name
                if held is not None:
                    for layer, rows in enumerate(held):
                        for a, b in zip(rows, c.held_rows(layer), strict=True):
                            assert torch.equal(a, b), (name, layer)
        got.append(sim.step())
    for a, b in zip(got, expected, strict=True):  # and the run goes on exactly as if nothing happened
        assert a.token_id == b.token_id
        for la, lb in zip(a.lanes, b.lanes, strict=True):
            assert (la.logit_diff, la.token_id, la.spans, la.cache_tokens) == (
                lb.logit_diff,
                lb.token_id,
                lb.spans,
                lb.cache_tokens,
            )


def test_window_lane_equals_a_full_cache_masked_the_same_way_across_many_wraps() -> None:
    """Independent of the strip: the full KV cache with the lane's mask gives the same logits."""
    model = load(LLAMA).model
    ids = torch.randint(0, model.cfg.vocab_size, (1, 70), generator=torch.Generator().manual_seed(1))
    for spec, w, s in (("window:5", 5, 0), ("sink:3+window:2", 2, 3), ("window:1", 1, 0)):
        cache, ref = make_cache(spec, model.cfg.n_layers), KVCache(model.cfg.n_layers)
        ref.mask_window, ref.mask_sinks = w, s
        a = model(ids[:, :9], torch.arange(9), cache, last_only=False).logits
        b = model(ids[:, :9], torch.arange(9), ref, last_only=False).logits
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
        for t in range(9, 70):
            a = model(ids[:, t : t + 1], torch.tensor([t]), cache).logits
            b = model(ids[:, t : t + 1], torch.tensor([t]), ref).logits
            torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
            assert cache.held_rows(1)[2].tolist() == list(range(min(s, t + 1))) + list(range(max(s, t + 1 - w), t + 1))
        assert cache.allocated_bytes <= 2 * (s + 2 * w + 1) * ROW_BYTES  # a bounded strip, not a growing tensor


# ------------------------------------------------------------------------------------------- the app
def test_the_app_draws_window_and_sink_lanes(qtbot, qapp) -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from kvsim.ui.lanes import policy_text
    from kvsim.ui.lanes.attention import attention_rows

    w = ready_window(qtbot, qapp, LLAMA, "Once upon", size=(1920, 1080))
    w.controller.set_lanes("none,kv,window:4,sink:1+window:3")
    qtbot.waitUntil(lambda: w.controller.can_step and len(w.lane_panels) == 4, timeout=20_000)
    assert w.controller.run_steps(8)
    s = w.session
    n = s.n_rows()
    assert n > 8
    lanes = (
        (2, "sliding window (last 4)", "window 4", "window:4", 0, 4),
        (3, "attention sinks + window (first 1, last 3)", "sinks 1+3", "sink:1+window:3", 1, 3),
    )
    for index, title, short, spec, sinks, window in lanes:
        panel = w.lane_panels[index]
        assert policy_text.lane_label(s, index) == title  # in words; the spec is in the tooltip
        head = panel.header.text()
        assert title.split(" (")[0] in head or short in head, head  # a narrow header: its short form with its numbers
        assert spec not in head and spec in panel.header.toolTip()
        read = s.read_positions(index)
        expect_read = list(range(sinks)) + list(range(n - window, n))
        assert read is not None and read.tolist() == expect_read
        # its K table: evicted rows transparent, the held ones drawn
        alpha = panel.k.image.image[:, 0, 3]
        assert list(alpha) == [255 if p in expect_read else 0 for p in range(n)]
        # its attention: the newest query over exactly the keys it read (sinks included), NaN elsewhere
        layer, head = panel.layer, panel.head
        g = head // (s.config.n_heads // s.config.n_kv_heads)
        k_all = np.concatenate([r.k[layer, g] for r in s.records])
        q = s.records[-1].q[layer, head]
        expect = attention_rows(q, k_all[read], np.array([n - 1]), read)[0]
        got = w.derived.attention_values(index, layer, head, n - 1)
        np.testing.assert_allclose(got[read], expect, rtol=1e-5, atol=1e-7)
        assert np.isnan(np.delete(got, read)).all()
    assert not np.isnan(w.derived.attention_values(1, 0, 0, n - 1)).any()  # the kv lane sees every key
    w.shutdown()


@pytest.mark.parametrize("window, sinks", [(1, 0), (3, 0), (4, 2), (2, 5), (6, 1)])
def test_strip_against_a_list_of_rows(window: int, sinks: int) -> None:
    """Random chunk sizes (prompts longer and shorter than the window, decode rows, several rows at
    once), each update sometimes undone: the rows read and held are always the expected ones."""
    gen = torch.Generator().manual_seed(window * 10 + sinks)
    spec = f"sink:{sinks}+window:{window}" if sinks else f"window:{window}"
    cache = make_cache(spec, 2)

    def rows(a: int, b: int) -> torch.Tensor:  # row p holds the value p in every element: easy to check
        return torch.arange(a, b, dtype=torch.float32).view(1, 1, -1, 1).expand(1, 2, -1, 3).contiguous()

    n = 0
    for _ in range(60):
        t = int(torch.randint(1, 2 * window + 3 if n == 0 else 4, (), generator=gen))
        before = [tuple(x.clone() for x in cache.held_rows(layer)) for layer in range(2)] if n else None
        for layer in range(2):
            k_all, v_all = cache.update(layer, rows(n, n + t), -rows(n, n + t), torch.arange(n, n + t))
            read = [p for p in range(n) if p < sinks or p > n - window] + list(range(n, n + t))  # the first new query's window
            assert cache.key_positions(layer).tolist() == read
            assert k_all[0, 1, :, 2].tolist() == read and (-v_all[0, 0, :, 0]).tolist() == read
        if int(torch.randint(0, 3, (), generator=gen)) == 0:  # the step did not complete: undo it
            cache.truncate(n)
            if before is None:
                assert cache.n_tokens == 0
            else:
                for layer in range(2):
                    for a, b in zip(before[layer], cache.held_rows(layer), strict=True):
                        assert torch.equal(a, b)
            continue
        n += t
        held = [p for p in range(n) if p < sinks or p >= n - window]
        for layer in range(2):
            k, v, pos = cache.held_rows(layer)
            assert pos.tolist() == held and k[0, 0, :, 0].tolist() == held and (-v[0, 1, :, 1]).tolist() == held
        assert cache.nbytes == len(held) * 2 * 2 * 2 * 3 * 4


def test_the_cache_bytes_curve_flattens_for_a_window_lane(qtbot, qapp):
    """The costs panel's bytes plot: the KV cache's curve keeps growing, the window lane's plateaus at W rows."""
    w = ready_window(
        qtbot, qapp, "random:family=llama,layers=2,heads=4,kv_heads=2,dim=32,seed=5", "abcdefgh", lanes="kv,window:4"
    )
    assert w.controller.run_steps(8)
    kv_bytes = list(w.costs.curves[0][3].yData)
    win_bytes = list(w.costs.curves[1][3].yData)
    row = 2 * 2 * 2 * 8 * 4  # K and V × layers × kv heads × head dim × fp32
    assert kv_bytes == [row * w.session.n_rows(step) for step in range(8)]
    assert win_bytes == [row * 4] * 8  # the prompt alone is already longer than the window
    w.shutdown()
