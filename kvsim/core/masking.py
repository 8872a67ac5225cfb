"""Which keys a query may see: one rule for the model's attention mask, the records and the app.

Pure operators on position arrays, so it works on numpy arrays and torch tensors alike and imports
neither (the app draws attention before the engine, and torch, are loaded).
"""

from __future__ import annotations

from typing import Any  # numpy arrays and torch tensors alike


def visibility(q_pos: Any, k_pos: Any, model_window: int | None = None, lane_window: int | None = None, sinks: int = 0) -> Any:
    """(T, S) bool, numpy or torch alike: may the query at ``q_pos[t]`` see the key at ``k_pos[s]``?
    Causal; inside the model's own window (Mistral); inside the lane's window unless the key is one of
    the first ``sinks`` positions. The model's mask and the app's derived attention both use this."""
    q, k = q_pos[:, None], k_pos[None, :]
    visible = k <= q
    if model_window is not None:
        visible = visible & (k > q - model_window)
    if lane_window is not None:
        inside = k > q - lane_window
        if sinks:
            inside = inside | (k < sinks)
        visible = visible & inside
    return visible
