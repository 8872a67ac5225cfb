"""Lane specs → cache policies. Adding a technique is one file that registers its policy here.

Grammar (case-insensitive names, parameters as the policy defines them)::

    SPEC := TERM ("+" TERM)*        e.g.  kv   window:64   sink:4+window:60   int4:g32:r16
    TERM := NAME (":" ARG)*

A policy class names its terms (``terms = ("sink", "window")``; a term ``"int4:hadamard"`` is a variant of
``int4`` that a spec names by the word among its arguments: ``int4:g32:hadamard``), may have whole-spec aliases
(``cached`` for ``kv``), and turns the terms' arguments into options (``parse_options``). A lane is
keyed everywhere by its spec exactly as the user gave it; ``LaneSpec.policy`` is the canonical
term list, ``LaneSpec.options`` what the policy parsed (JSON values, saved in traces).
Third-party policies can also register through the ``kvsim.cache_policies`` entry-point group.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .base import SpecError
from .weights import parse_weights

if TYPE_CHECKING:
    from .base import Cache, PolicyInfo

_POLICIES: dict[tuple[str, ...], type[Cache]] = {}
_ALIASES: dict[str, type[Cache]] = {}
_entry_points_loaded = False


def register_policy(cls: type[Cache]) -> type[Cache]:
    """Class decorator: make ``cls`` buildable from specs whose terms are ``cls.terms``."""
    if not cls.terms:
        raise TypeError(f"{cls.__name__} must name its spec terms (terms = ('name',))")
    key = tuple(t.lower() for t in cls.terms)
    _POLICIES[key] = cls
    for alias in cls.aliases:
        _ALIASES[alias.lower()] = cls
    return cls


def unregister_policy(cls: type[Cache]) -> None:
    """Forget ``cls`` (tests that register a policy of their own clean up with this)."""
    _POLICIES.pop(tuple(t.lower() for t in cls.terms), None)
    for alias in cls.aliases:
        _ALIASES.pop(alias.lower(), None)


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group="kvsim.cache_policies"):
        try:
            ep.load()  # importing the module registers its policies
        except Exception as exc:  # noqa: BLE001 - a broken plug-in must not break the built-in lanes
            import sys

            print(f"warning: cache policy plug-in {ep.name!r} failed to load: {exc}", file=sys.stderr)


@dataclass(frozen=True)
class LaneSpec:
    """One lane: its name (the spec as given), the policy's terms and the parsed options."""

    name: str
    policy: str  # canonical terms joined by "+", e.g. "kv", "sink+window"
    options: dict[str, Any] = field(default_factory=dict)
    #: weight-only quantization of the lane's model (the ``@w8`` / ``@w4:gG`` suffix); None = as loaded
    weights: dict[str, Any] | None = None


def known_specs() -> list[str]:
    """The grammar of every registered policy, for messages and the lane chooser."""
    _load_entry_points()
    return [cls.grammar or "+".join(cls.terms) for cls in _POLICIES.values()]


def policy_examples() -> list[tuple[str, str]]:
    """(example spec, grammar) of every registered policy: what the app's lane chooser offers."""
    _load_entry_points()
    return [(cls.example or "+".join(cls.terms), cls.grammar or "+".join(cls.terms)) for cls in _POLICIES.values()]


def parse_spec(text: str) -> LaneSpec:
    """``LaneSpec`` of one spec string; ``SpecError`` with the known grammar when it does not parse."""
    _load_entry_points()
    given = text.strip()
    if not given:
        raise SpecError("empty lane spec")
    if len(given) > 200:
        raise SpecError(f"lane spec too long ({len(given)} characters)")
    if "@" in given:  # a weights suffix on any policy: kv@w8, int4@w4:g64
        base, _, suffix = given.partition("@")
        policy = parse_spec(base)
        try:
            weights = parse_weights(suffix)
        except SpecError as exc:
            raise SpecError(f"lane {given!r}: {exc}") from None
        return LaneSpec(given, policy.policy, policy.options, weights)
    alias = _ALIASES.get(given.lower())
    if alias is not None:
        return LaneSpec(given, "+".join(alias.terms), alias.parse_options([[] for _ in alias.terms]))
    terms = [t.strip().split(":") for t in given.split("+")]
    if any(not t[0] for t in terms):
        raise SpecError(f"lane spec {given!r} has an empty term")
    key = tuple(t[0].lower() for t in terms)
    for i, term in enumerate(terms):  # a variant named by a word among a term's arguments: int4:g32:hadamard
        variant = next((a for a in term[1:] if key[:i] + (f"{key[i]}:{a.strip().lower()}",) + key[i + 1 :] in _POLICIES), None)
        if variant is not None:
            key = key[:i] + (f"{key[i]}:{variant.strip().lower()}",) + key[i + 1 :]
            term.remove(variant)
    cls = _POLICIES.get(key)
    if cls is None:
        raise SpecError(f"unknown lane {given!r} (known: {', '.join(known_specs())}; aliases: {', '.join(sorted(_ALIASES))})")
    try:
        options = cls.parse_options([[a.strip() for a in t[1:]] for t in terms])
    except SpecError as exc:
        raise SpecError(f"lane {given!r}: {exc} (expected {cls.grammar or '+'.join(cls.terms)})") from None
    return LaneSpec(given, "+".join(cls.terms), options)


def parse_lanes(text: str) -> tuple[LaneSpec, ...]:
    """Comma-separated specs, each named as given (``none,kv,window:64``)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise SpecError("no lanes given (e.g. --lanes none,kv)")
    if len(names) > 16:
        raise SpecError(f"{len(names)} lanes is more than kvsim compares at once (16 at most)")
    if len({n for n in names}) != len(names):
        raise SpecError(f"lane named twice in {text!r}")
    return tuple(parse_spec(n) for n in names)


def make_cache(spec: LaneSpec | str, n_layers: int, layer_windows: tuple[int | None, ...] | None = None) -> Cache:
    """Build the policy a spec names, for a model of ``n_layers`` layers. ``layer_windows`` (the model's
    own attention window of each layer, None for a global one) reaches a policy that takes it (``kv``)."""
    if isinstance(spec, str):
        spec = parse_spec(spec)
    cls = _POLICIES.get(tuple(spec.policy.split("+")))
    if cls is None:
        raise SpecError(f"unknown cache policy {spec.policy!r} (known: {', '.join(known_specs())})")
    if layer_windows is not None and "layer_windows" in inspect.signature(cls.__init__).parameters:
        return cls(n_layers, **spec.options, layer_windows=layer_windows)  # type: ignore[call-arg]
    return cls(n_layers, **spec.options)  # type: ignore[call-arg]  # each policy takes (n_layers, **its options)


def policy_class(policy: str) -> type[Cache] | None:
    """The registered class of a lane's recorded policy (``LaneSpec.policy``, e.g. "sink+window"; an alias
    such as "cached" too); None when no installed policy has that name."""
    _load_entry_points()
    key = tuple(t.strip().lower() for t in policy.split("+"))
    return _POLICIES.get(key) or _ALIASES.get(policy.strip().lower())


def describe_spec(spec: LaneSpec | str, n_layers: int = 1) -> PolicyInfo:
    """The description of the policy a spec names (a throwaway instance describes itself)."""
    return make_cache(spec, n_layers).describe()
