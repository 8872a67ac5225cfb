"""Small shared builders for the tests: seeded random models of each family, the CLI's JSON read in process,
the app's window made ready."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kvsim.models.loading import LoadedModel

# where the shared test modules live (this folder: helpers, hostile, stage_probe, hub_server...) and the checkout
# above it, whatever folder of tests/ a test file is in (and importing them costs no torch)
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

FAMILY_SPECS = {
    "gpt2": "random:family=gpt2,layers=2,heads=4,dim=64,vocab=300,ctx=512,seed=1",
    "llama-gqa": "random:family=llama,layers=2,heads=8,kv_heads=2,dim=64,vocab=300,ctx=512,seed=2",
    "llama-mqa": "random:family=llama,layers=2,heads=4,kv_heads=1,dim=64,vocab=300,ctx=512,seed=3",
    "llama-mha-tied-bias": "random:family=llama,layers=2,heads=4,kv_heads=4,dim=64,vocab=300,ctx=512,"
    "tie=true,qkv_bias=true,seed=4",
}


class Ids:
    """A tokenizer for a random model's ids (the reference tests' vocabularies, below the byte tokenizer's 256):
    each id is its own text."""

    eos_id = None
    bos_id = None

    def token_text(self, token_id: int) -> str:
        return f"<{token_id}>"


def load(spec: str) -> LoadedModel:
    from kvsim.models.loading import load_model

    return load_model(spec)


def cli_json(capsys, *argv: str) -> Any:
    """``kvsim *argv`` run in this process (no start-up to pay: the CLI's start-up has its own tests in
    test_cli_startup.py), exit code 0, its standard output read as one JSON document."""
    from kvsim.cli.entry import main

    capsys.readouterr()  # what earlier calls printed is not this command's
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def kvsim_in_process(capsys, *argv: str) -> subprocess.CompletedProcess:
    """``python -m kvsim *argv`` without the process: kvsim's ``main`` called here, its exit code and what it
    printed, as the subprocess would have returned them (for tests of a command, not of the start-up: that has
    its own tests, test_cli_startup.py and test_cli.py's ``python -m kvsim`` cases)."""
    from kvsim.cli.entry import main

    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return subprocess.CompletedProcess(["kvsim", *argv], code, out.out, out.err)


def cli_json_lines(capsys, *argv: str) -> tuple[list[dict], dict]:
    """``kvsim run ... --json`` in this process: its JSON lines, as (one dict per step or request, the summary)."""
    from kvsim.cli.entry import main

    capsys.readouterr()
    assert main(list(argv)) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return lines[:-1], lines[-1]["summary"]


def assert_one_row_product_agrees(x, w, bias, rows: bool = False) -> None:
    """``kvsim.models.kernels.row_matmul.linear(x, w, bias, rows)`` is counted by torch's FLOP counter as the kvsim operator, has
    F.linear's shape and dtype, agrees with it to float32 rounding, and a float64 reference bounds it."""
    import torch
    import torch.nn.functional as F
    from torch.utils.flop_counter import FlopCounterMode

    from kvsim.models.kernels.row_matmul import linear

    with FlopCounterMode(display=False) as counter:
        got = linear(x, w, bias, rows)
    assert "kvsim.row_linear" in {str(op) for ops in counter.get_flop_counts().values() for op in ops}
    want = F.linear(x, w, bias)
    assert got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    # a float64 reference bounds both: they differ from it by float32 rounding only
    exact = F.linear(x.double(), w.double(), bias.double())
    assert float((got.double() - exact).abs().max()) < 1e-4


def ready_window(
    qtbot, qapp, model: str, prompt: str, *, lanes: str | None = None, size: tuple[int, int] | None = None, persist: bool = False
):
    """The app's main window on ``model``, shown, animations instant, its first run ready — and, with
    ``lanes``, a run of those lanes ready (the GUI tests' common start)."""
    import os

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from kvsim.ui import theme
    from kvsim.ui.shell.window import MainWindow

    theme.apply(qapp)
    w = MainWindow(model=model, prompt=prompt, persist=persist)
    w.animator.set_speed("instant")
    qtbot.addWidget(w)
    if size is not None:
        w.resize(*size)
    w.show()
    assert w.controller.wait_ready(60), w.controller.last_error
    if lanes is not None:
        n = len(lanes.split(","))
        w.controller.set_lanes(lanes)
        qtbot.waitUntil(
            lambda: (
                w.controller.can_step
                and len(w.session.lanes) == n
                and [lane.name for lane in w.session.lanes] == lanes.split(",")
            ),
            timeout=20_000,
        )
    return w


def opt_in_model_file(env_var: str, name: str, what: str):
    """The path of a fetched model for an opt-in test: ``env_var=1`` (the user's data dir, as it was
    before the tests redirected it) or ``env_var=path``; skipped, saying how, when the variable is unset."""
    import os
    from pathlib import Path

    import pytest

    from kvsim.models.catalog import FETCHABLE

    choice = os.environ.get(env_var, "")
    if not choice:
        pytest.skip(f"opt-in: set {env_var}=1 (after `kvsim models get {name}`) or {env_var}=path/to/the.gguf to {what}")
    spec = FETCHABLE[name]
    if choice == "1":
        from conftest import REAL_ENV

        data = REAL_ENV.get("KVSIM_DATA_DIR")
        if data:
            root = Path(data) / "models"
        else:  # the user's data dir as kvsim resolves it outside the tests (platformdirs reads the env)
            from platformdirs import user_data_dir

            saved = dict(os.environ)
            for key, value in REAL_ENV.items():  # the variables the tests redirected, as they were
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            try:
                root = Path(user_data_dir("kvsim", appauthor=False)) / "models"
            finally:
                os.environ.clear()
                os.environ.update(saved)
        path = root / spec.name / spec.filename
    else:
        path = Path(choice).expanduser()
    if not path.is_file():
        pytest.fail(f"{env_var} is set but {path} is not a file: run `kvsim models get {name}`")
    return path


class SyncHost:
    """A dock's host that runs a job at once on this thread, as the worker would (errors → one line to ``failed``)."""

    session = None

    def __init__(self, loaded) -> None:
        self.loaded = loaded

    def submit(self, fn, done, failed=None) -> bool:
        try:
            result = fn(self.loaded)
        except Exception as exc:  # noqa: BLE001 - as the worker: the message goes back
            failed(str(exc))
        else:
            done(result)
        return True


def synthetic_long_run(steps: int, seed: int = 0):
    """A valid two-lane run (``uncached,cached``) of ``steps`` steps, made in seconds whatever ``steps``: a real run of a
    small random model for its first 4 steps (the metadata, the prefill), then one decode record a step built from the
    last real one — positions, tokens, each lane's counts, FLOPs and bytes from the model's formulas
    (``kvsim.engine.counting.step_cost``), its cache held, and a clock with seeded noise (the uncached lane's growing
    with the sequence). Returns the ``Trace`` (``Trace.load`` of its save checks it as any file)."""
    import random
    from dataclasses import fields

    import numpy as np

    from kvsim.caches.registry import parse_lanes
    from kvsim.engine.counting import step_cost
    from kvsim.engine.records import LaneStep, StepRecord
    from kvsim.engine.simulate import Simulator
    from kvsim.engine.trace import Trace
    from kvsim.models.loading import load_model

    prompt = [1, 2, 3, 4]
    real_steps = min(steps, 4)
    loaded = load_model(f"random:family=llama,layers=1,heads=1,kv_heads=1,dim=8,vocab=256,ctx={steps + len(prompt)},seed={seed}")
    sim = Simulator(loaded.model, loaded.tokenizer, prompt, parse_lanes("uncached,cached"), model_id="synthetic")
    records = list(sim.run(real_steps, stop_at_eos=False))
    cfg, rng = loaded.model.cfg, random.Random(seed)
    base = records[-1]
    per_row = base.lanes[1].cache_bytes // max(1, base.lanes[1].cache_tokens)
    changed = {"kv_positions", "context", "flops", "flops_by_component", "bytes_by_component", "wall_ms", "cache_tokens"}
    changed |= {"cache_bytes", "token_id", "top_ids", "top_probs", "recompute_diff"}
    fixed = {lane.name: {f.name: getattr(lane, f.name) for f in fields(lane) if f.name not in changed} for lane in base.lanes}
    for s in range(real_steps, steps):
        n = len(prompt) + s  # the sequence after this step's row
        token = rng.randrange(256)
        lanes = []
        for lane, new in zip(base.lanes, (n, 1), strict=True):  # uncached: every row again; cached: the new one
            cost = step_cost(cfg, new, n)
            ms = (0.002 * n if new > 1 else 0.05) * (1 + 0.2 * rng.random())
            lanes.append(
                LaneStep(
                    **{**fixed[lane.name]},
                    kv_positions=new,
                    context=n,
                    flops=cost.total_flops,
                    flops_by_component=dict(cost.flops),
                    bytes_by_component=dict(cost.bytes),
                    wall_ms=ms,
                    cache_tokens=n if new == 1 else 0,
                    cache_bytes=n * per_row if new == 1 else 0,
                    token_id=token,
                    top_ids=(token,),
                    top_probs=(0.5,),
                    recompute_diff=0.0 if new > 1 else None,
                )
            )
        records.append(
            StepRecord(
                run_id=base.run_id,
                step=s,
                phase="decode",
                positions=np.array([n - 1]),
                input_ids=np.array([records[-1].token_id]),
                token_id=token,
                token=loaded.tokenizer.token_text(token),
                q=base.q,
                k=base.k,
                v=base.v,
                lanes=tuple(lanes),
            )
        )
    return Trace(meta=dict(sim.trace.meta), records=records)
