"""Cache policies, one file each, registered by their spec terms (see ``registry``).

from kvsim.caches import make_cache, parse_lanes
lanes = parse_lanes("none,kv")           # LaneSpec("none", ...), LaneSpec("kv", ...)
cache = make_cache(lanes[1], n_layers)   # a KVCache
"""

from .adakv import AdaKVCache  # noqa: F401 - registers adakv:B[:wW]
from .base import Cache, PolicyInfo, PolicyWords, SpecError, visibility
from .duo import DuoAttentionCache  # noqa: F401 - registers duo:P[:sS][:wW]
from .h2o import H2OCache  # noqa: F401 - registers h2o:B[:rR]
from .kv import KVCache
from .latent import LatentSVDCache  # noqa: F401 - registers latent:R
from .none import NoCache
from .paged import PagedCache  # noqa: F401 - registers paged:B
from .pyramid import PyramidKVCache  # noqa: F401 - registers pyramid:B[:wW]
from .quantized import Int4Cache, Int8Cache  # noqa: F401 - registers int8 / int4
from .registry import (
    LaneSpec,
    describe_spec,
    known_specs,
    make_cache,
    parse_lanes,
    parse_spec,
    policy_class,
    policy_examples,
    register_policy,
    unregister_policy,
)
from .rotated import HadamardInt4Cache  # noqa: F401 - registers int4:hadamard (int4:g32:hadamard)
from .snapkv import SnapKVCache  # noqa: F401 - registers snapkv:B[:wW]
from .speculative import SpeculativeCache  # noqa: F401 - registers spec:K:DRAFT
from .stream import StreamCache  # noqa: F401 - registers stream:S+window:W
from .tova import TOVACache  # noqa: F401 - registers tova:B
from .window import SinkWindowCache, SlidingWindowCache  # noqa: F401 - registers window:W / sink:S+window:W

__all__ = [
    "Cache",
    "PolicyInfo",
    "PolicyWords",
    "SpecError",
    "KVCache",
    "NoCache",
    "LaneSpec",
    "describe_spec",
    "known_specs",
    "make_cache",
    "parse_lanes",
    "parse_spec",
    "policy_class",
    "policy_examples",
    "register_policy",
    "unregister_policy",
    "visibility",
]
