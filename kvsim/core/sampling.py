"""Choosing the next token: greedy, temperature, top-k, top-p, from one uniform draw.

The same draw ``u`` applied to two lanes' logits picks the same token when their distributions
agree, which is how the simulator shows what a lossy lane would have chosen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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


def choose(logits: torch.Tensor, sampling: Sampling, u: float) -> int:
    """The token ``logits`` pick under ``sampling`` with the uniform draw ``u`` (argmax when greedy)."""
    if sampling.temperature == 0:
        return int(torch.argmax(logits))
    return draw(probabilities(logits, sampling), u)


def draw(probs: torch.Tensor, u: float) -> int:
    """Inverse-CDF draw: the same ``u`` on two lanes picks the same token when they agree."""
    cdf = torch.cumsum(probs.double(), 0)
    idx = int(torch.searchsorted(cdf, torch.tensor([u * float(cdf[-1])], dtype=torch.float64), right=True))
    return min(idx, probs.numel() - 1)
