"""The themes: WCAG contrast of what the light (projector) theme draws, computed from the theme's own
colours (the same figures docs/contrast.md measures on screenshots), colours told apart, and the
switch re-colouring a live window without rebuilding it."""

from __future__ import annotations

import gc
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

pytest.importorskip("pytestqt")
from helpers import ready_window  # noqa: E402

from kvsim.ui import theme  # noqa: E402
from kvsim.ui.lanes.plots import dim_rows  # noqa: E402

MODEL = "random:family=llama,layers=2,heads=4,kv_heads=2,dim=64,seed=1"


@pytest.fixture
def light():
    theme._use("light")
    yield
    theme._use("dark")


def _wcag(fg: tuple[int, int, int], bg: tuple[int, int, int]) -> float:
    """The WCAG 2 formula written out again, channel by channel (an independent reference)."""

    def lum(c):
        out = []
        for v in c:
            v /= 255
            out.append(v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4)
        return 0.2126 * out[0] + 0.7152 * out[1] + 0.0722 * out[2]

    a, b = sorted((lum(fg), lum(bg)))
    return (b + 0.05) / (a + 0.05)


def test_contrast_ratio_matches_wcag_reference_values():
    assert theme.contrast_ratio("#000000", "#ffffff") == pytest.approx(21.0)
    assert theme.contrast_ratio("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)  # WebAIM's 4.5:1 grey
    rng = np.random.default_rng(0)
    for fg, bg in rng.integers(0, 256, (50, 2, 3)):
        assert theme.contrast_ratio(fg, bg) == pytest.approx(_wcag(tuple(fg), tuple(bg)), rel=1e-9)


def test_light_theme_keeps_three_to_one_for_heatmaps_dimmed_rows_and_hatching(light):
    bg = theme.rgb(theme.BG)
    assert theme.BG == "#ffffff"
    for name in (theme.KV_CMAP, theme.ATTN_CMAP):
        table = theme.lut(name)
        assert theme.contrast_ratio(table, bg).min() >= 3.0, name  # every colour of the scale, V's included
        assert theme.contrast_ratio(theme.dimmed(table), bg).min() >= 3.0, name  # rows read from a cache
    assert theme.contrast_ratio(theme.MASKED, bg) >= 3.0  # masked (future) hatching
    assert theme.contrast_ratio(theme.UNSEEN, bg) >= 3.0  # outside the window / evicted cross-hatching
    for i in range(len(theme.LANE_COLORS)):
        assert theme.contrast_ratio(theme.lane_color(i), bg) >= 3.0  # lane outlines, curves and numbers


def test_dimmed_is_what_dim_rows_draws(light):
    table = theme.lut(theme.KV_CMAP)
    rgba = np.concatenate([table, np.full((256, 1), 255, np.uint8)], axis=1)[None]  # (1, 256, 4)
    drawn = dim_rows(rgba, 1)[0, :, :3]
    np.testing.assert_array_equal(drawn, theme.dimmed(table).astype(np.uint8))


def test_dark_theme_hatching_is_now_readable_too():
    assert theme.current() == "dark"
    assert theme.contrast_ratio("#3a3f4a", theme.BG) < 1.8  # what the issue measured (1.75:1)
    assert theme.contrast_ratio(theme.MASKED, theme.BG) >= 3.0
    assert theme.contrast_ratio(theme.UNSEEN, theme.BG) >= 3.0


@pytest.mark.parametrize("name", theme.THEMES)
def test_group_colours_are_far_from_the_two_lane_colours(name):
    theme._use(name)
    try:
        assert np.allclose(theme.lab("#ffffff"), [100, 0, 0], atol=0.05)
        lanes = [theme.lane_color(i) for i in range(2)]  # orange and blue
        for g in range(len(theme.GROUP_COLORS)):
            assert _apart(theme.group_color(g), lanes), theme.group_color(g)
        # the criterion fails the old colours: a peach read as the orange lane, a lavender as the blue one
        assert not _apart("#fdd0a2", [theme.PALETTES["dark"]["LANE_COLORS"][0]])
        assert not _apart("#bcbddc", [theme.PALETTES["dark"]["LANE_COLORS"][1]])
    finally:
        theme._use("dark")


def _apart(color: str, lanes: list[str]) -> bool:
    """Not mistaken for a lane: far in CIELAB (ΔE76 ≥ 35) and either nearly grey (chroma < 12) or of
    another hue (≥ 40° from each lane's hue angle)."""
    g = theme.lab(color)
    chroma, hue = np.hypot(g[1], g[2]), np.degrees(np.arctan2(g[2], g[1]))
    for lane in lanes:
        c = theme.lab(lane)
        turn = abs((np.degrees(np.arctan2(c[2], c[1])) - hue + 180) % 360 - 180)
        if np.linalg.norm(g - c) < 35 or (chroma >= 12 and turn < 40):
            return False
    return True


def test_set_theme_calls_listeners_and_forgets_dead_views(qapp):
    seen = []

    class View:
        def retheme(self, name):
            seen.append(name)

    view = View()
    theme.on_change(view.retheme)
    try:
        with pytest.raises(ValueError, match="unknown theme"):
            theme.set_theme(qapp, "sepia")
        theme.set_theme(qapp, "light")
        assert seen == ["light"] and theme.BG == "#ffffff" and qapp.palette().window().color().name() == "#ffffff"
        del view
        gc.collect()
        theme.set_theme(qapp, "dark")
        assert seen == ["light"]  # a view that is gone is not called
    finally:
        theme.set_theme(qapp, "dark")


def test_switching_theme_recolours_a_live_window_and_back(qtbot, qapp):
    w = ready_window(qtbot, qapp, MODEL, "The cache remembers", size=(1280, 720))
    try:
        assert w.controller.run_steps(4)
        cached = w.lane_panels[1]
        before = {name: getattr(cached, name).image.image.copy() for name in ("k", "q", "v", "a")}
        n_cached = w.session.n_rows() - 1
        theme.set_theme(qapp, "light")
        assert cached.glw.backgroundBrush().color().name() == "#ffffff"
        assert w.costs.glw.backgroundBrush().color().name() == "#ffffff"
        assert cached.color == theme.lane_color(1) == "#0072B2"
        assert cached.kv_text.fill.color().name() == "#ffffff" and cached.kv_text.color.name() == "#111111"
        assert w.costs.curves[1][0].opts["pen"].color().name().lower() == "#0072b2"
        # the same values: the computed row is coloured as before, the cached rows dimmed towards grey now
        light_k = cached.k.image.image
        np.testing.assert_array_equal(light_k[n_cached:], before["k"][n_cached:])
        assert (light_k[:n_cached] != before["k"][:n_cached]).any()
        assert theme.contrast_ratio(light_k[:n_cached].reshape(-1, 4), theme.BG).min() >= 3.0
        theme.set_theme(qapp, "dark")
        for name, img in before.items():
            np.testing.assert_array_equal(getattr(cached, name).image.image, img)  # back exactly as it was
    finally:
        theme.set_theme(qapp, "dark")
        w.shutdown()
