"""A pooled row: the step a classifier head reads, one row of the final sequence (the class token), or a mean of its
rows (mean pooling, with or without the class token), each possibly through a LayerNorm the marked line applied to
it; another row fitting better is the bug form "the wrong token pooled". Sequence pooling (CCT's) is a third form: a
Linear the line called scores each row, a softmax over the rows weighs them, and their weighted sum is the pooled
vector; the softmax taken over the scores' own axis instead (each weight 1: the rows summed) is that form's bug."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from transformer_trace.checks.base import THIS, BoundT, CallBinder, Check, TraceUse, close, linear
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.sources import ModuleRef, Ref, TensorSource
from transformer_trace.trace.child.protocol import ModuleKind


def _another_row(check: Any, s: TensorSource) -> Fit | None:
    out, source = s.t(check.out), s.t(check.source)
    if source.dim() < 2 or source[:, 0].shape != out.shape:
        return None
    for row in range(source.shape[1]):
        if row != check.row and close(out, check.pooled(s, source[:, row]), "")[0]:
            _, detail = close(out, check.pooled(s, source[:, row]), f"vs row {row}")
            return Fit(True, f"the wrong token was pooled: your {s.name(check.out)} is row {row} of "
                             f"{s.name(check.source)}, not row {check.row} ({detail})")
    return Fit(False, f"no other row of the {source.shape[1]} fits")


def _wrong_rows(check: Any, s: TensorSource) -> Fit | None:
    """A mean of all the patch rows but one at an end, where the run shows every row of the sequence is a patch (as many
    rows as the patch embedding has, no class token captured): the first or the last patch left out of the mean."""
    if check.patches is None or check.class_token is not None:
        return None
    out, source, n = s.t(check.out), s.t(check.source), s.t(check.patches).shape[1]
    if source.dim() != 3 or source.shape[1] != n or n < 3:
        return None
    for rows, words in ((slice(1, None), f"rows 1..{n - 1}, the first patch left out"),
                        (slice(None, -1), f"rows 0..{n - 2}, the last patch left out")):
        fits, detail = close(out, check.pooled(s, source[:, rows].mean(1)), "vs the mean of those rows")
        if fits:
            return Fit(True, f"the wrong rows pooled: your {s.name(check.out)} is the mean of {words} of "
                             f"{s.name(check.source)}, where all {n} rows are patches ({s.name(check.patches)} has "
                             f"{n}, no class token among them) ({detail})")
    return Fit(False, f"neither the mean of rows 1..{n - 1} nor of rows 0..{n - 2} fits")


def _scored_over_wrong_axis(check: Any, s: TensorSource) -> Fit | None:
    """Sequence pooling with the softmax over the scores' axis rather than the rows (``F.softmax(scores, dim=-1)``)."""
    if check.scorer is None:
        return None
    fits, detail = close(s.t(check.out), check.scored(s, s.t(check.source), -1),
                         "vs the rows weighted by a softmax over the scores' own axis")
    return Fit(fits, f"the softmax over the wrong axis: your {s.name(check.out)} weighs the rows of "
               f"{s.name(check.source)} by a softmax over each row's scores, not over the rows ({detail})"
               if fits else detail)


@dataclass(frozen=True, kw_only=True)
class RowEquals(Check):
    """Tensors only: ``out`` is row ``row`` (axis 1) of ``source``."""
    CLAIM = "is one row of the sequence"

    # the sequence the line reads, where no snapshot shows it, or the norm the line applied to it first:
    # `self.norm(x)[:, 0]` (generator/trace/reading/weights.py)
    # (and the Linear that scores the rows, sequence pooling's: generator/trace/reading/rows.py pooled_scorer)
    TRACE = TraceUse(reads_locals=True, also_calls=frozenset({ModuleKind.LAYER_NORM, ModuleKind.LINEAR}))
    BUG_FORMS = (BugForm("the wrong token pooled", "the output vs every other row of the sequence", _another_row),
                 BugForm("the wrong rows pooled", "the output vs the mean of the patch rows but the first, or the "
                         "last, where every row is a patch", _wrong_rows),
                 BugForm("softmax over the wrong axis", "sequence pooling's weights vs a softmax over the scores' own "
                         "axis", _scored_over_wrong_axis))

    OPTIONAL = (("class_token",), ("patches",))

    out: Ref = THIS
    source: Ref
    row: int
    claim: str
    # a trace's: the class token as captured (its S05), the evidence that row 0 is no patch, so that mean pooling may
    # leave it out (``x[:, 1:].mean(1)``); and the LayerNorm the marked line applied to the pooled vector
    # (``fc_norm(x.mean(1))``: generator/trace/reading/rows.py pooled_norm)
    class_token: Ref | None = None
    norm: ModuleRef | None = None
    # a trace's: the patch embedding as captured, whose patches counted against the sequence's rows show that no class
    # token is among them (the first or last row left out of a mean is then a patch left out)
    patches: Ref | None = None
    # a trace's: the Linear the marked line called to score each row of the sequence (sequence pooling)
    scorer: ModuleRef | None = None

    def bound_by(self, calls: CallBinder[BoundT]) -> BoundT | None:
        """Bound to the one sequence the traced line read (or the norm it applied to it), where none is shown."""
        return calls.row(self)

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        source, out = s.t(self.source), s.t(self.out)
        passed, detail = close(out, self.pooled(s, source[:, self.row]), self.claim)
        for mean, claim, words in () if passed else self._means(s, source):
            if close(out, mean, "")[0]:
                return claim, True, close(out, mean, words)[1]
        return self.claim, passed, detail

    def pooled(self, s: TensorSource, vector: torch.Tensor) -> torch.Tensor:
        """``vector`` (B, D) through the LayerNorm the line applied to the pooled vector, where it applied one."""
        if self.norm is None:
            return vector
        module: Any = s.module(self.norm)  # a LayerNorm rebuilt from the line's call (rebuilt.py)
        return F.layer_norm(vector, module.normalized_shape, module.weight.to(vector.dtype),
                            module.bias.to(vector.dtype), module.eps)

    def scored(self, s: TensorSource, source: torch.Tensor, axis: int) -> torch.Tensor:
        """The rows of ``source`` weighted by a softmax over ``axis`` of the scorer's output, summed (sequence pooling:
        ``matmul(softmax(scorer(x), dim=1).transpose(-1, -2), x)``), one pooled vector per score."""
        assert self.scorer is not None
        weights = torch.softmax(linear(s, self.scorer, source), dim=axis)
        return (weights.transpose(-1, -2) @ source).squeeze(-2)

    def _means(self, s: TensorSource, source: torch.Tensor) -> Iterator[tuple[torch.Tensor, str, str]]:
        """Mean pooling's forms: every row averaged (a model without a class token), and, where the class token was
        captured, the rows after it (the class token left out), each through the line's LayerNorm where it has one."""
        normed = ", then the LayerNorm the line applied to the mean" if self.norm is not None else ""
        yield (self.pooled(s, source.mean(1)), f"is the mean of the final sequence's rows (mean pooling, no class "
               f"token){normed}", "the mean over the positions")
        if self.scorer is not None:
            yield (self.scored(s, source, 1), "is the final sequence's rows weighted by a softmax over the rows of the "
                   "scores the line's Linear gave them, summed (sequence pooling)", "the softmax-weighted rows")
        if self.class_token is not None and source.shape[1] > 1:
            yield (self.pooled(s, source[:, 1:].mean(1)), f"is the mean of the final sequence's rows after row 0 "
                   f"(mean pooling that leaves the class token, {s.name(self.class_token)}, out){normed}",
                   "the mean over the positions after row 0")
