"""K projected with the queries' Linear on its own split line (`k = self.q_proj(k).view(...)`, a copy-paste slip),
where q, k and v are each projected and split into heads on a line of their own and no snapshot shows the whole
projections: each split re-joins the output of the Linear its own line called (weights.py ``_projections_called``),
so the split alone passes. The q and k lines calling one module is what tells it: the trace numbers each parameter
once, by identity, so one weight tensor read by both calls is one Linear (two Linears initialised alike are two
tensors). Then K holds the queries' values, the bug form the Vision Transformer's split steps name from the values
(checks/projected_alike.py): "computed from another tensor"."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from transformer_trace.checks.base import Check, close
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.sources import Ref, TensorSource
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall


def _queries_linear(check: OwnKeyProjection, s: TensorSource) -> Fit | None:
    # (said without the heads' names: the lines of one snapshot of three tensors may all be named by the first's)
    same, detail = close(s.t(check.key_weight), s.t(check.query_weight), "its weight vs the queries' Linear's")
    if not same:
        return None
    alike, heads = close(s.t(check.key_heads), s.t(check.query_heads), "the keys vs the queries")
    values = f"; {heads}: the keys are the queries, value for value" if alike else ""
    return Fit(True, "your keys hold the queries' values: the line that made them called the Linear the queries' line "
                     f"called, one module ({detail}), where the keys' own projection belongs{values}")


@dataclass(frozen=True, kw_only=True)
class OwnKeyProjection(Check):
    """The keys' split line called a Linear of its own, not the one the queries' line called: ``key_weight`` and
    ``query_weight`` are the weights of the two Linears, ``key_heads`` and ``query_heads`` the heads they made."""
    CLAIM = "the keys are projected by a Linear of their own"

    BUG_FORMS = (BugForm("computed from another tensor", "the Linear the keys' line called vs the queries' line's, "
                         "weight for weight", _queries_linear),)
    SUBSTITUTES = False

    query_heads: Ref
    key_heads: Ref
    query_weight: Ref
    key_weight: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        same, detail = close(s.t(self.key_weight), s.t(self.query_weight), "the keys' Linear's weight vs the "
                             "queries' Linear's")
        return "the keys are projected by a Linear of their own", not same, detail


def one_linear(made: Sequence[Sequence[ModuleCall]]) -> torch.Tensor | None:
    """The weight the queries' and the keys' parts (``made``'s first two: every call whose output holds that part's
    values) were both made with, where every such call is of one Linear (the very same parameter tensor); None where
    two Linears could have made either (clones of one untrained Linear give equal parts: the values cannot tell), or a
    part has no Linear call with a weight."""
    if len(made) < 2 or not made[0] or not made[1]:
        return None
    weights = [call.params.get("weight") if call.kind == ModuleKind.LINEAR else None for part in made[:2]
               for call in part]
    first = weights[0]
    return first if first is not None and all(weight is first for weight in weights) else None
