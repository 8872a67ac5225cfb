"""The roofline's words in the app's language: a point's hover text, the cursor's line, a bound's
limit and a duration. ``kvsim.costs.roofline`` writes the same sentences in English for the CLI (it stays
English); these are built from the same figures, and in English they are the engine's text exactly
(a test compares them)."""

from __future__ import annotations

from kvsim.core.words import QT_TRANSLATE_NOOP  # typed str, found by pyside6-lupdate as Qt's
from kvsim.costs.roofline import COMPONENT_WORDS, RooflinePoint, num

from ...i18n import local, translate

_COMPONENTS = {
    "total": QT_TRANSLATE_NOOP("views.roofline_words", "the whole step"),
    "linear": QT_TRANSLATE_NOOP("views.roofline_words", "weight matmuls (projections, MLP, LM head)"),
    "attention": QT_TRANSLATE_NOOP("views.roofline_words", "attention (q·Kᵀ and ·V)"),
}
_LIMITS = {
    "memory-bound": QT_TRANSLATE_NOOP("views.roofline_words", "memory-bound"),
    "compute-bound": QT_TRANSLATE_NOOP("views.roofline_words", "compute-bound"),
    "memory": QT_TRANSLATE_NOOP("views.roofline_words", "memory"),
    "compute": QT_TRANSLATE_NOOP("views.roofline_words", "compute"),
}


def g3(x: float) -> str:
    """Three significant digits in the locale's format ("0.509" / "0,509")."""
    return local(f"{x:.3g}")


def si(x: float) -> str:
    """``kvsim.costs.roofline.num`` (3.2 G) in the locale's format."""
    return local(num(x))


def component(name: str) -> str:
    """A component ("total", "linear", "attention") in words."""
    return translate("views.roofline_words", _COMPONENTS[name]) if name in _COMPONENTS else COMPONENT_WORDS.get(name, name)


def limit(text: str) -> str:
    """ "memory-bound" / "compute-bound" (or their first word) in the app's language."""
    return translate("views.roofline_words", _LIMITS[text]) if text in _LIMITS else text


def rows(n: int) -> str:
    return translate("views.roofline_words", "1 row") if n == 1 else translate("views.roofline_words", "{n} rows").format(n=n)


def brief(p: RooflinePoint, lane_label: str | None = None) -> str:
    """The point in short: its lane, rows, intensity and achieved FLOP/s (``RooflinePoint.brief``)."""
    return translate("views.roofline_words", "{lane}: {rows}, {intensity} FLOP/byte, {achieved}FLOP/s").format(
        lane=lane_label or p.lane_name, rows=rows(p.new_positions), intensity=g3(p.intensity), achieved=si(p.achieved)
    )


def describe(p: RooflinePoint, lane_label: str | None = None) -> str:
    """The point in plain words, the hover text (``RooflinePoint.describe``)."""
    template = (
        QT_TRANSLATE_NOOP(
            "views.roofline_words",
            "step {step} ({phase}, {new} new of {context} rows) · lane {lane} · {component}: {flops}FLOP over {bytes}B "
            "moved = {intensity} FLOP/byte · {achieved}FLOP/s achieved in {ms} ms",
        )
        if p.held is None
        else QT_TRANSLATE_NOOP(  # sparse attention: the rows read are not the rows held
            "views.roofline_words",
            "step {step} ({phase}, {new} new, read {context} of {held} rows held) · lane {lane} · {component}: {flops}FLOP "
            "over {bytes}B moved = {intensity} FLOP/byte · {achieved}FLOP/s achieved in {ms} ms",
        )
    )
    return translate("views.roofline_words", template).format(
        step=p.step,
        phase=p.phase,
        new=p.new_positions,
        context=p.context,
        held=p.held,
        lane=lane_label or p.lane_name,
        component=component(p.component),
        flops=si(p.flops),
        bytes=si(p.bytes),
        intensity=g3(p.intensity),
        achieved=si(p.achieved),
        ms=g3(p.seconds * 1e3),
    )


def seconds(s: float) -> str:
    """A duration in the unit that reads best: µs, ms or s (in the locale's format)."""
    if s < 1e-3:
        return f"{g3(s * 1e6)} µs"
    if s < 1:
        return f"{g3(s * 1e3)} ms"
    return f"{g3(s)} s"
