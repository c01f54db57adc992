"""A stack's first layer input where no position step is marked: the token embeddings themselves. A model whose
positions live inside its attention (rotary, T5's relative bias, ALiBi, a retention's decay) or that has none hands
its lookup straight to the first layer; the catalogue's step before it (token + position) is then never a tensor of
the script, and the layer's input is checked against the token embeddings instead of being not checkable. Where a
position step is marked, or the layer is a later one, it is the plain ``SameTensor`` claim."""

from __future__ import annotations

from dataclasses import dataclass, replace

from transformer_trace.checks.base import CheckResult
from transformer_trace.checks.values import SameTensor
from transformer_trace.sources import Ref, TensorSource

TOKENS_CLAIM = ("is the token embeddings: no position step is marked (positions inside the attention: rotary, "
                "relative, a decay; or none)")


@dataclass(frozen=True, kw_only=True)
class HandedOverOrTokens(SameTensor):
    """``SameTensor``; where ``source`` is the step named ``embedding`` (token + position, the first layer's input)
    and neither it nor the ``positions`` step is captured, ``out`` equals the ``tokens`` step."""

    OPTIONAL = (("tokens",), ("positions",))

    tokens: Ref | None = None
    positions: Ref | None = None
    embedding: str = ""  # the name the first layer's ``source`` has (a later layer's is the layer before's output)

    def run(self, s: TensorSource) -> CheckResult:
        first = bool(self.embedding) and s.name(self.source) == self.embedding
        if (not first or self.tokens is None or s.has(self.source) or not s.has(self.tokens) or not s.has(self.out)
                or (self.positions is not None and s.has(self.positions))):
            return super().run(s)
        result = SameTensor(out=self.out, source=self.tokens, claim=TOKENS_CLAIM).run(s)
        return replace(result, detail=f"no snapshot shows {s.name(self.source)} and none marks positions: read as "
                                      f"{s.name(self.tokens)} itself; {result.detail}")
