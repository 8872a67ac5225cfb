"""``spec:K:DRAFT``: speculative decoding over a contiguous KV cache. Each target forward checks K
drafted tokens at once (a small prefill on top of the cache), keeps the longest prefix the target
agrees with and rolls the K/V rows of the rejected drafts back (``truncate``). The storage is the
``kv`` cache's; the drafting and checking live in ``kvsim.engine.speculative``.

DRAFT is ``lookup`` (prompt lookup: the tokens that followed the latest earlier occurrence of the
context's last n-gram — no second model), ``early:N`` (the model's first N layers, its final norm
and its head), ``head`` (a learned EAGLE-style draft head over the model's last hidden state, trained
for that model: kvsim ships tiny's) or ``model:NAME`` (a smaller model with the same tokenizer).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..core.words import QT_TRANSLATE_NOOP
from .base import PolicyInfo, PolicyWords, SpecError
from .kv import KVCache
from .registry import register_policy

MAX_DRAFT = 16  # drafted tokens per check: more is never accepted in practice and only costs rows


@register_policy
class SpeculativeCache(KVCache):
    """A KV cache whose lane drafts and checks several tokens per target forward."""

    terms = ("spec",)
    aliases: ClassVar[tuple[str, ...]] = ()  # not the kv cache's ("cached")
    grammar = "spec:K:DRAFT"
    example = "spec:4:lookup"
    speculative = True  # the simulator drives this lane with a drafter (kvsim.engine.speculative)

    def __init__(
        self, n_layers: int, k: int = 4, draft: str = "lookup", layers: int | None = None, model: str | None = None
    ) -> None:
        super().__init__(n_layers)
        self.k, self.draft, self.draft_layers, self.draft_model = k, draft, layers, model

    @classmethod
    def parse_options(cls, args: list[list[str]]) -> dict[str, Any]:
        (a,) = args
        if len(a) < 2:
            raise SpecError("give the number of drafted tokens and a draft source, e.g. spec:4:lookup")
        if not a[0].isdigit() or not 1 <= int(a[0]) <= MAX_DRAFT:
            raise SpecError(f"K must be a whole number from 1 to {MAX_DRAFT}, got {a[0]!r}")
        k, source, rest = int(a[0]), a[1].lower(), a[2:]
        if source in ("lookup", "head") and not rest:
            return {"k": k, "draft": source}
        if source == "early":
            if len(rest) != 1 or not rest[0].isdigit() or int(rest[0]) < 1:
                raise SpecError("early:N needs the number of layers the draft runs, e.g. spec:4:early:2")
            return {"k": k, "draft": "early", "layers": int(rest[0])}
        if source == "model":
            name = ":".join(rest).strip()
            if not name:
                raise SpecError("model:NAME needs the draft model's name, e.g. spec:4:model:tiny")
            return {"k": k, "draft": "model", "model": name}
        raise SpecError(f"unknown draft source {':'.join(a[1:])!r} (lookup, early:N, head or model:NAME)")

    def draft_label(self) -> str:
        if self.draft == "early":
            return f"early:{self.draft_layers}"
        if self.draft == "model":
            return f"model:{self.draft_model}"
        return self.draft

    @classmethod
    def words(cls, options: dict[str, Any]) -> PolicyWords:
        # its formula is the kv cache's (inherited ``bill``): the drafts it accepted ahead of the text are
        # billed by ``lane_bill`` from the rows the lane reports holding
        draft = str(options.get("draft", "lookup"))
        explanation = QT_TRANSLATE_NOOP("policies", "drafts {k} tokens, checks them in one forward, rolls back the rejected rows")
        if draft == "head":  # the one source that is a trained model of its own: the lane says so
            explanation = QT_TRANSLATE_NOOP(
                "policies", "drafts {k} tokens with a head trained on the model's last hidden state, checks them in one forward"
            )
        if draft == "early":
            draft = f"early:{options.get('layers')}"
        elif draft == "model":
            draft = f"model:{options.get('model')}"
        return PolicyWords(
            QT_TRANSLATE_NOOP("policies", "Speculative (k={k}, {draft})"),
            explanation,
            {"k": int(options.get("k", 4)), "draft": draft},
            {
                "K": QT_TRANSLATE_NOOP("policies", "the drafted tokens per check"),
                "DRAFT": QT_TRANSLATE_NOOP("policies", "where drafts come from"),
            },
            short=QT_TRANSLATE_NOOP("policies", "Spec. k={k}"),
        )

    def describe(self) -> PolicyInfo:
        options: dict[str, Any] = {"k": self.k, "draft": self.draft, "layers": self.draft_layers, "model": self.draft_model}
        return PolicyInfo.from_words(
            f"spec:{self.k}:{self.draft_label()}", self.words(options), reuses_past=True, lossy=False, evicts=False
        )
