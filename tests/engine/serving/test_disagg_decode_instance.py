"""The disaggregated run's decode instance (``kvsim.serving.disagg._decode_instance``) driven in this process: the
same message protocol and shared-memory segments as the spawned process of tests/processes/test_disaggregated.py,
with a thread in its place, so the decode side's logic is checked (and measured) where a child's is not."""

from __future__ import annotations

import multiprocessing
import threading

import pytest

from kvsim.core.sampling import SimulationError
from kvsim.serving import disagg
from kvsim.serving.disagg import run_colocated, run_disaggregated

PROMPTS = [[5, 6, 7, 8, 9, 10, 11, 12, 13, 14], [30, 31, 32, 33, 34]]


class _ThreadProcess:
    """``multiprocessing.Process``'s part the run uses (start, join, is_alive, terminate), as a thread."""

    def __init__(self, target, args, daemon: bool) -> None:
        self._thread = threading.Thread(target=target, args=args, daemon=daemon)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def terminate(self) -> None:
        """A thread cannot be killed: the run terminates a decode instance still alive when it stops (after an
        error it may be between its last message and its end), so wait for it, and fail if it never ends."""
        self._thread.join(10)
        assert not self._thread.is_alive(), "the decode instance did not end"


class _InProcess:
    Pipe = staticmethod(multiprocessing.Pipe)
    Process = _ThreadProcess


@pytest.fixture
def decode_in_a_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(disagg.mp, "get_context", lambda _method: _InProcess)


@pytest.mark.parametrize("steps", [1, 3])
def test_the_decode_instance_gives_the_colocated_tokens(tiny, decode_in_a_thread, steps) -> None:
    model, tokenizer = tiny.model, tiny.tokenizer
    colocated = run_colocated(model, tokenizer, PROMPTS, steps=steps, block_size=4)
    split = run_disaggregated("tiny", model, tokenizer, PROMPTS, steps=steps, block_size=4)
    assert [r.tokens for r in split.requests] == [r.tokens for r in colocated.requests]
    assert all(len(r.tokens) == steps and len(r.itl_ms) == steps - 1 for r in split.requests)
    assert [t.blocks for t in split.transfers] == [3, 2]  # ceil(prompt / 4) blocks each
    for r, t in zip(split.requests, split.transfers, strict=True):
        assert r.token_ms[0] <= t.arrived_ms  # the first token comes out of the prefill, before the rows leave
        if steps > 1:
            assert t.arrived_ms <= r.token_ms[1]  # the second cannot come before they arrive


def test_a_model_the_decode_instance_cannot_load_is_its_error(tiny, decode_in_a_thread) -> None:
    with pytest.raises(SimulationError, match="the decode instance did not start: ModelLoadError: .*nonexistent"):
        run_disaggregated("/nonexistent/model/path", tiny.model, tiny.tokenizer, PROMPTS, steps=2, block_size=4)


def test_transfers_record_the_blocks_of_both_pools(tiny, decode_in_a_thread) -> None:
    """What the disaggregation view draws: the prefill pool's blocks each request's rows left, the decode pool's
    blocks they went into (as many), each pool's size, and who the decode pool held right after they arrived."""
    split = run_disaggregated("tiny", tiny.model, tiny.tokenizer, PROMPTS, steps=3, block_size=4)
    for i, t in enumerate(split.transfers):
        assert len(t.prefill_blocks) == len(t.decode_blocks) == t.blocks
        assert max(t.prefill_blocks) < t.prefill_pool_blocks and max(t.decode_blocks) < t.decode_pool_blocks
        held = dict(t.decode_held)
        assert held[i] == t.decode_blocks
        blocks = [b for bs in held.values() for b in bs]
        assert len(blocks) == len(set(blocks))  # no block held by two requests
