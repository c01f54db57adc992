"""Log-probabilities as the logits step: ``torch.log_softmax(self.proj(x), dim=-1)`` on one marked line, the Linear's
output shown by no snapshot (trace/reading/log_probs.py binds the Linear from the line's call). The step is checked as
the log-softmax over the vocabulary (the last axis) of that Linear applied to its input. Every log-probability tensor
keeps one property whatever its form: each position's ``exp`` sums to 1 over the vocabulary; a log-softmax over
another axis (the positions) is its bug form."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from transformer_trace.checks.base import THIS, Check, close, linear, tolerance
from transformer_trace.checks.evidence import BugForm, Fit, Property
from transformer_trace.checks.values import farthest_row_sum
from transformer_trace.sources import ModuleRef, Ref, TensorSource


def _over_another_axis(check: Any, s: TensorSource) -> Fit | None:
    """The step is the log-softmax of the Linear's output over another axis than the vocabulary."""
    logits, actual = linear(s, check.module, s.t(check.x)), s.t(check.out)
    if logits.shape != actual.shape:
        return None
    for axis in range(logits.dim() - 1):
        fits, detail = close(actual, torch.log_softmax(logits, dim=axis), f"vs the log-softmax over axis {axis}")
        if fits:
            return Fit(True, f"your {s.name(check.out)} is the log-softmax over axis {axis} of the "
                             f"{logits.shape[axis]}, not over the vocabulary (the last axis, {logits.shape[-1]} "
                             f"entries) ({detail})")
    return Fit(False, "no log-softmax over another axis fits")


def _sum_to_one(check: Any, s: TensorSource) -> str | None:
    """Positions whose probabilities (``exp`` of the step) do not sum to 1 over the vocabulary."""
    row_sum, worst = farthest_row_sum(s.t(check.out).double().exp())
    if worst <= tolerance() * 10:
        return None
    return (f"your {s.name(check.out)} are no log-probabilities over the vocabulary: exp of a position's row sums to "
            f"{row_sum:.4g} ({worst:.1e} away from 1)")


@dataclass(frozen=True, kw_only=True)
class LogProbsOfLinear(Check):
    """``out`` is the log-softmax over the last axis of the Linear ``module`` applied to ``x``."""
    CLAIM = "is the log-probabilities over the vocabulary of a Linear layer applied to its input"

    BUG_FORMS: ClassVar[tuple[BugForm, ...]] = (BugForm("log-softmax over the wrong axis", "the step vs the "
                                                        "log-softmax of the Linear's output over each other axis",
                                                        _over_another_axis),)
    PROPERTIES = (Property("log-probabilities sum to 1 over the vocabulary", "exp of each position's row, summed",
                           _sum_to_one),)

    out: Ref = THIS
    x: Ref
    module: ModuleRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        name = s.name(self.module)
        expected = torch.log_softmax(linear(s, self.module, s.t(self.x)), dim=-1)
        passed, detail = close(s.t(self.out), expected, f"recomputed log_softmax(x·Wᵀ + b) over the vocabulary with "
                               f"{name}'s weights")
        return f"equals the log-softmax over the vocabulary of {name} applied to its input", passed, detail
