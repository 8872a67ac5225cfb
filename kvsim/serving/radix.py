"""A radix tree of cached prefixes (SGLang's RadixAttention structure), beside the hash-chained blocks.

    tree = RadixTree(capacity=4096)          # tokens it may hold (None: no limit)
    n = tree.match(prompt)                   # longest cached prefix of ``prompt``, in tokens
    tree.insert(prompt + output[:-1])        # cache what a finished request computed
    tree.lock(prompt) / tree.unlock(prompt)  # a running request pins its path: never evicted
    tree.evict(100)                          # free ≥ 100 tokens: least recently used unpinned leaves first

Each edge carries a run of token ids; a node's path from the root spells a cached prefix, and the K/V
rows of those positions are what a server would keep for it. Two prefixes share the nodes of their
common part, however long — token-level sharing, where the block pool (``kvsim.caches.blocks``)
shares only whole blocks of ``B`` tokens found by a chained hash. Every node keeps a reference count
(the running requests whose path goes through it) and the logical time it was last used; eviction
takes leaves whose count is 0, least recently used first, so a prefix many requests share (an inner
node) goes last. Written from SGLang's description of RadixAttention, not its code.

``compare_reuse`` runs a request list through both — the real block pool with prefix caching, and
this tree — and reports, per request, the prompt tokens each would reuse.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from ..caches.block_table import SequenceBlocks
from ..caches.blocks import BlockPool
from ..core.pool_semantics import DEFAULT_POOL_SEMANTICS
from ..core.sampling import SimulationError


class RadixNode:
    __slots__ = ("id", "key", "children", "parent", "ref", "last_used")

    def __init__(self, node_id: int, key: tuple[int, ...], parent: RadixNode | None) -> None:
        self.id = node_id
        self.key = key  # the tokens on the edge into this node
        self.children: dict[int, RadixNode] = {}  # first token of the child's edge → child
        self.parent = parent
        self.ref = 0  # running requests whose path goes through this node
        self.last_used = 0


@dataclass(frozen=True)
class NodeView:
    """One node, for a view: its edge's tokens, where it hangs, how it is held."""

    id: int
    parent: int | None
    depth: int  # tokens from the root to the end of its edge
    tokens: tuple[int, ...]
    ref: int
    last_used: int
    leaf: bool


class RadixTree:
    def __init__(self, capacity: int | None = None) -> None:
        if capacity is not None and (not isinstance(capacity, int) or capacity < 1):
            raise SimulationError(f"the tree's capacity must be a whole number of tokens ≥ 1, got {capacity!r}")
        self.capacity = capacity
        self._ids = itertools.count(1)
        self.root = RadixNode(0, (), None)
        self.n_tokens = 0  # tokens on all edges: what the tree holds
        self.clock = 0
        self.evicted = 0  # tokens evicted so far

    # ------------------------------------------------------------------ walking
    def _walk(self, tokens: Sequence[int], split: bool) -> tuple[RadixNode, int]:
        """The deepest node whose path is a prefix of ``tokens``, and that path's length. With ``split``
        a match ending inside an edge splits it, so the match ends exactly at a node."""
        self.clock += 1
        node, i = self.root, 0
        node.last_used = self.clock
        while i < len(tokens):
            child = node.children.get(int(tokens[i]))
            if child is None:
                break
            key = child.key
            n = 0
            while n < len(key) and i + n < len(tokens) and key[n] == tokens[i + n]:
                n += 1
            if n < len(key):
                if not split:
                    return node, i + n
                child = self._split(child, n)
            child.last_used = self.clock
            node, i = child, i + n
        return node, i

    def _split(self, child: RadixNode, n: int) -> RadixNode:
        """Cut ``child``'s edge after ``n`` tokens: a new inner node takes the first part."""
        parent = child.parent
        assert parent is not None
        mid = RadixNode(next(self._ids), child.key[:n], parent)
        mid.ref, mid.last_used = child.ref, child.last_used
        parent.children[child.key[0]] = mid
        child.key = child.key[n:]
        child.parent = mid
        mid.children[child.key[0]] = child
        return mid

    def match(self, tokens: Sequence[int]) -> int:
        """How many leading tokens of ``tokens`` the tree holds (their rows could be reused)."""
        return self._walk(tokens, split=False)[1]

    def insert(self, tokens: Sequence[int]) -> int:
        """Cache ``tokens`` (a prefix's rows computed); returns how many were already held. Evicts to stay
        within the capacity afterwards (never the path just inserted while it is locked)."""
        tokens = tuple(int(t) for t in tokens)
        node, i = self._walk(tokens, split=True)
        if i < len(tokens):
            leaf = RadixNode(next(self._ids), tokens[i:], node)
            leaf.last_used = self.clock
            node.children[tokens[i]] = leaf
            self.n_tokens += len(tokens) - i
        if self.capacity is not None and self.n_tokens > self.capacity:
            self.evict(self.n_tokens - self.capacity)
        return i

    def _path(self, tokens: Sequence[int]) -> RadixNode:
        node, i = self._walk(tokens, split=True)
        if i != len(tokens):
            raise KeyError("these tokens are not cached whole")
        return node

    def lock(self, tokens: Sequence[int]) -> None:
        """A running request holds this cached prefix: every node on its path gets one more reference."""
        node: RadixNode | None = self._path(tokens)
        while node is not None:
            node.ref += 1
            node = node.parent

    def unlock(self, tokens: Sequence[int]) -> None:
        node: RadixNode | None = self._path(tokens)
        while node is not None:
            if node.ref <= 0:
                raise RuntimeError("unlock of a prefix that is not locked")
            node.ref -= 1
            node = node.parent

    # ------------------------------------------------------------------ eviction
    def evict(self, n_tokens: int) -> int:
        """Drop at least ``n_tokens`` tokens (fewer if everything left is locked): leaves with no
        reference, least recently used first; a parent left childless becomes a leaf in turn."""
        heap = [(leaf.last_used, leaf.id, leaf) for leaf in self._leaves() if leaf.ref == 0]
        heapq.heapify(heap)
        freed = 0
        while heap and freed < n_tokens:
            _, _, leaf = heapq.heappop(heap)
            parent = leaf.parent
            assert parent is not None
            del parent.children[leaf.key[0]]
            freed += len(leaf.key)
            if parent is not self.root and not parent.children and parent.ref == 0:
                heapq.heappush(heap, (parent.last_used, parent.id, parent))
        self.n_tokens -= freed
        self.evicted += freed
        return freed

    def _leaves(self) -> list[RadixNode]:
        return [n for n in self._nodes() if not n.children and n is not self.root]

    def _nodes(self) -> list[RadixNode]:
        out, stack = [], [self.root]
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(node.children.values())
        return out

    # ------------------------------------------------------------------ reading
    def sequences(self) -> list[tuple[int, ...]]:
        """Every root-to-leaf path's tokens (what the tree holds, as whole prefixes)."""
        out = []

        def walk(node: RadixNode, prefix: tuple[int, ...]) -> None:
            here = prefix + node.key
            if not node.children and node is not self.root:
                out.append(here)
            for child in node.children.values():
                walk(child, here)

        walk(self.root, ())
        return sorted(out)

    def nodes(self) -> list[NodeView]:
        """Every node but the root, parents before children (for a view of the tree)."""
        out: list[NodeView] = []
        stack = [(child, 0) for child in self.root.children.values()]
        while stack:
            node, depth = stack.pop()
            d = depth + len(node.key)
            parent = node.parent.id if node.parent is not None and node.parent is not self.root else None
            out.append(NodeView(node.id, parent, d, node.key, node.ref, node.last_used, not node.children))
            stack.extend((child, d) for child in node.children.values())
        return out

    def check(self) -> None:
        """Invariants (tests call this): edges non-empty and keyed by their first token, a node's count
        at least its children's, the token count the sum of the edges."""
        total = 0
        for node in self._nodes():
            if node is self.root:
                continue
            assert node.key and node.parent is not None and node.parent.children[node.key[0]] is node
            assert node.ref >= sum(c.ref for c in node.children.values()) >= 0
            total += len(node.key)
        assert total == self.n_tokens, (total, self.n_tokens)


@dataclass(frozen=True)
class ReuseComparison:
    """Prompt tokens reused per request: token-level (radix tree) vs block-level (hash-chained blocks)."""

    block_size: int
    capacity: int | None  # tokens each cache may hold (None: no limit)
    prompt_tokens: tuple[int, ...]
    radix: tuple[int, ...]
    blocks: tuple[int, ...]
    radix_evicted: int  # tokens the tree evicted
    block_evictions: int  # blocks the pool handed out again

    def as_dict(self) -> dict[str, object]:
        return {
            "block_size": self.block_size,
            "capacity": self.capacity,
            "prompt_tokens": list(self.prompt_tokens),
            "radix_reused": list(self.radix),
            "block_reused": list(self.blocks),
            "radix_total": sum(self.radix),
            "block_total": sum(self.blocks),
            "prompt_total": sum(self.prompt_tokens),
        }


def compare_reuse(
    prompts: Sequence[Sequence[int]],
    outputs: Sequence[Sequence[int]] | None = None,
    block_size: int = 16,
    capacity: int | None = None,
    semantics: str = DEFAULT_POOL_SEMANTICS,
) -> ReuseComparison:
    """Run the requests one after another through a radix tree and through the block pool (prefix
    caching on): each looks its prompt up (the last token always computed), then caches what it
    computed — its prompt and all but the last of its ``outputs`` (the last token's row is never
    computed). ``capacity`` (tokens) bounds both: the pool gets ``capacity // block_size`` blocks (and,
    under ``semantics="vllm"``, the null block besides, as a requests run's pool)."""
    outputs = [()] * len(prompts) if outputs is None else outputs
    if len(outputs) != len(prompts):
        raise SimulationError(f"{len(outputs)} outputs for {len(prompts)} prompts")
    if any(not p for p in prompts):
        raise SimulationError(f"request {next(i for i, p in enumerate(prompts) if not p) + 1} is an empty prompt")
    tree = RadixTree(capacity)
    if capacity is None:  # room for every block any request computes: nothing is ever evicted
        n_blocks = sum(-(-(len(p) + max(len(o) - 1, 0)) // block_size) for p, o in zip(prompts, outputs, strict=True))
    else:
        n_blocks = capacity // block_size
    if n_blocks < 1:
        raise SimulationError(f"a capacity of {capacity} tokens holds no block of {block_size}")
    pool = BlockPool(block_size, n_blocks + (semantics == "vllm"), prefix_caching=True, semantics=semantics)
    radix, blocks = [], []
    for i, (prompt, output) in enumerate(zip(prompts, outputs, strict=True)):
        prompt = [int(t) for t in prompt]
        held = prompt + [int(t) for t in output][:-1]
        radix.append(min(tree.match(prompt), len(prompt) - 1))
        seq = SequenceBlocks(pool, owner=i)
        reused = seq.match_prefix(prompt)
        blocks.append(reused)
        seq.reserve(reused, len(held) - reused, held[reused:])  # a full pool: PoolFullError (capacity too small)
        seq.commit()
        seq.free()
        tree.insert(held)
    return ReuseComparison(
        block_size,
        capacity,
        tuple(len(p) for p in prompts),
        tuple(radix),
        tuple(blocks),
        tree.evicted,
        pool.evictions,
    )
