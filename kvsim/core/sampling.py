"""Choosing the next token: greedy, temperature, top-k, top-p, from one uniform draw.

The same draw ``u`` applied to two lanes' logits picks the same token when their distributions
agree, which is how the simulator shows what a lossy lane would have chosen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch


class SimulationError(ValueError):
    """Bad simulator input: empty prompt, too long for the model, unknown lane, bad sampling."""


#: below this, softmax(logits / T) underflows to 0/0 in float32: treat as greedy would be wrong, so refuse
MIN_TEMPERATURE = 1e-4


@dataclass(frozen=True)
class Sampling:
    temperature: float = 0.0  # 0 = greedy
    top_k: int | None = None
    top_p: float | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        t = self.temperature
        if not isinstance(t, int | float) or not math.isfinite(t) or t < 0 or t > 100:
            raise SimulationError(f"temperature must be a number from 0 to 100, got {t}")
        if 0 < t < MIN_TEMPERATURE:
            raise SimulationError(f"temperature must be 0 (greedy) or at least {MIN_TEMPERATURE:g}, got {t:g}")
        if self.top_k is not None and self.top_k < 1:
            raise SimulationError(f"top-k must be ≥ 1, got {self.top_k}")
        if self.top_p is not None and not (math.isfinite(self.top_p) and 0 < self.top_p <= 1):
            raise SimulationError(f"top-p must be in (0, 1], got {self.top_p}")
        if not 0 <= self.seed < 2**63:
            raise SimulationError(f"seed must be between 0 and 2^63 - 1, got {self.seed}")


def probabilities(logits: torch.Tensor, sampling: Sampling) -> torch.Tensor:
    """The distribution a sampled token is drawn from (temperature, then top-k, then top-p)."""
    logits = logits.float()
    if sampling.temperature == 0:
        probs = torch.zeros_like(logits)
        probs[int(torch.argmax(logits))] = 1.0
        return probs
    logits = logits / sampling.temperature
    if sampling.top_k is not None and sampling.top_k < logits.numel():
        kth = torch.topk(logits, sampling.top_k).values[-1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if sampling.top_p is not None and sampling.top_p < 1:
        sorted_p, order = torch.sort(probs, descending=True)
        keep = torch.cumsum(sorted_p, 0) - sorted_p < sampling.top_p  # always keeps the top token
        probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_p[keep])
        probs = probs / probs.sum()
    return probs


def argmax(x: torch.Tensor) -> int:
    """``int(torch.argmax(x))`` of a 1-D tensor: the first largest entry (a NaN counts as the largest, the first NaN
    wins, as in torch). A CPU float vector goes through numpy's, which is vectorized (a 49,152-entry vocabulary:
    ~7 µs, torch's ~50 µs); the same index."""
    if x.device.type == "cpu" and x.dim() == 1 and x.dtype in (torch.float32, torch.float64):
        return int(np.argmax(x.detach().numpy()))
    return int(torch.argmax(x))


def choose(logits: torch.Tensor, sampling: Sampling, u: float) -> int:
    """The token ``logits`` pick under ``sampling`` with the uniform draw ``u`` (argmax when greedy)."""
    if sampling.temperature == 0:
        return argmax(logits)
    return draw(probabilities(logits, sampling), u)


def draw(probs: torch.Tensor, u: float) -> int:
    """Inverse-CDF draw: the same ``u`` on two lanes picks the same token when they agree."""
    cdf = torch.cumsum(probs.double(), 0)
    idx = int(torch.searchsorted(cdf, torch.tensor([u * float(cdf[-1])], dtype=torch.float64), right=True))
    return min(idx, probs.numel() - 1)


#: ``top``'s blocks: the block maxima narrow a vocabulary to the few blocks that can hold its k largest entries
_TOP_BLOCK = 1024


def top(x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.topk(x, k)`` of a 1-D tensor (values, indices; sorted), the same answer at a fraction of the cost on
    a CPU vocabulary (49,152 entries: ~30 µs, topk ~100 µs): the k-th largest of the blocks' maxima is a threshold
    at or below the k-th largest entry, so only the entries at or above it are ranked. Whenever the answer could
    depend on how topk orders equal values (a tie among the k largest, or with the next), a NaN is there, or the
    threshold lets too many through, topk ranks the whole tensor, as before."""
    n = x.numel()
    if x.device.type != "cpu" or x.dim() != 1 or x.dtype != torch.float32 or not 0 < k <= 16 or n < max(8, 2 * k) * _TOP_BLOCK:
        found = torch.topk(x, min(k, n))
        return found.values, found.indices
    xs = x.detach().numpy()
    whole = n // _TOP_BLOCK * _TOP_BLOCK
    maxima = xs[:whole].reshape(-1, _TOP_BLOCK).max(1)  # NaN propagates
    if whole < n:  # the last, shorter block
        maxima = np.append(maxima, xs[whole:].max())
    threshold = np.partition(maxima, -k)[-k]
    if not np.isnan(maxima).any():  # topk ranks NaN above everything
        index = np.flatnonzero(xs >= threshold)  # ≥ k entries: the k blocks' maxima
        if index.size <= 8 * _TOP_BLOCK:
            values = xs[index]
            order = np.argsort(-values, kind="stable")[: k + 1]
            ranked = values[order]
            # no tie: the k values differ, and the k-th is above every other candidate (so above every other entry)
            if bool(np.all(ranked[: k - 1] > ranked[1:k])) and (index.size == k or ranked[k - 1] > ranked[k]):
                return torch.from_numpy(ranked[:k].copy()), torch.from_numpy(index[order[:k]])
    found = torch.topk(x, k)
    return found.values, found.indices


def top_of_exp(logp: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.topk(logp.exp(), k)`` (a distribution's k likeliest tokens from its log-probabilities) taking the
    exponential of only the k + 1 largest log-probabilities: exp is monotone, so they are the k largest
    probabilities unless it rounds two of them to one value, and then (a tie among the k, or between the k-th and
    the next) the whole vector's exp is ranked, as before. On the CPU, torch's exp of a few entries is bitwise
    its exp of the same entries within the whole vector (one vectorized kernel for every length, tails included;
    tests/engine/runs/test_record_ranks.py checks the answers), so the values are those the whole vector's exp gives."""
    n = logp.numel()
    if logp.device.type == "cpu" and logp.dtype == torch.float32 and logp.dim() == 1 and 0 < k < n:
        values, index = top(logp, k + 1)
        p = values.exp()
        if bool((p[: k - 1] > p[1:k]).all()) and bool(p[k - 1] > p[k]):
            return p[:k], index[:k]
    return top(logp.exp(), min(k, n))
