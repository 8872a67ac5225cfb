"""The lanes view's column words on layers that do not hold their own K/V rows: a hybrid model's Gated DeltaNet
layers say they hold a fixed-size state (its bytes), a CLA borrower says whose K/V it reads; every other layer keeps
the ordinary titles. Plain functions of the config: no window."""

from __future__ import annotations

from kvsim.models.config import parse_random_spec
from kvsim.ui.lanes.text import title_options, title_tips


def test_recurrent_layers_say_their_fixed_state() -> None:
    cfg, _ = parse_random_spec("random:family=qwen3_next,layers=4,heads=4,kv_heads=2,dim=64")
    conv, rec = cfg.recurrent_state_values()
    for layer in range(4):
        k_title = title_options(cfg, layer, 0, 0)[0][0]
        tip = title_tips(cfg, 0, 0, layer)[0]
        if layer in cfg.linear_layers:
            assert f"{4 * (conv + rec):,} B" in k_title and "Gated DeltaNet" in tip
        else:
            assert k_title.startswith("K after RoPE") and "Gated DeltaNet" not in tip


def test_cla_borrowers_name_their_owner() -> None:
    cfg, _ = parse_random_spec("random:family=llama,layers=4,heads=4,kv_heads=2,dim=64,cla=2")
    assert [title_options(cfg, layer, 0, 0)[0][0] for layer in range(4)][1::2] == [
        "K of layer 0 (shared, CLA)",
        "K of layer 2 (shared, CLA)",
    ]
    assert title_options(cfg, 2, 0, 0)[0][0].startswith("K after RoPE")
    assert "reads layer 2's" in title_tips(cfg, 0, 0, 3)[0]
