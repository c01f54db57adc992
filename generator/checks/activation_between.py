"""A feed-forward's second Linear applied to an activation of the first Linear's output, both read from the module
calls its line recorded (``self.linear2(self.dropout(self.activation(self.linear1(x))))`` on one marked line, the first
Linear's output shown by no snapshot; trace/reading/activated_calls.py binds them). The activation is a family (the
catalogue's, or ReLU, GELU exact or tanh, SiLU, Tanh, sigmoid, whichever fits), never assumed; the second Linear applied
to the first's output itself, where no activation of the family fits, is the bug form "the activation left out"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from transformer_trace.checks.base import THIS, Check, close, linear
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.checks.layers import ACTIVATIONS
from transformer_trace.sources import ModuleRef, Ref, TensorSource

IDENTITY = "no activation"
ACTIVATION_LEFT_OUT = "the activation left out"


def _family(expected: str) -> list[str]:
    """The activations to try, the catalogue's first (``expected``, matched without case), the identity never."""
    first = [name for name in ACTIVATIONS if name.lower() == expected.lower()]
    return [*first, *(name for name in ACTIVATIONS if name not in first and name != IDENTITY)]


def _left_out(check: Any, s: TensorSource) -> Fit | None:
    """The step is the second Linear of the first one's output itself, where the catalogue's activation changes that
    output (it would have been applied) and no activation of the family fits."""
    hidden, actual = s.t(check.x), s.t(check.out)
    name = s.name(check.module)
    expected = _family(check.activation)[0]
    activated = ACTIVATIONS[expected](hidden)
    if close(activated, hidden, "")[0]:
        return None  # the activation changes nothing here: leaving it out cannot be told
    plain, detail = close(actual, linear(s, check.module, hidden), f"recomputed {name}(x) with x the first Linear's "
                          "output itself")
    _, with_it = close(actual, linear(s, check.module, activated), f"with {expected} between")
    changed = int((~(activated - hidden).abs().le(1e-6)).sum())
    return Fit(plain, f"your {s.name(check.out)} equals {name} applied to the first Linear's output with no "
                      f"activation between ({detail}), where {expected} changes {changed} of its {hidden.numel()} "
                      f"values; {with_it}")


@dataclass(frozen=True, kw_only=True)
class LinearOfActivated(Check):
    """``out`` is the Linear ``module`` applied to an activation of ``x`` (the first Linear's output): the catalogue's
    ``activation`` or another member of the family (a correct variant), whichever fits."""

    BUG_FORMS: ClassVar[tuple[BugForm, ...]] = (
        BugForm(ACTIVATION_LEFT_OUT, "the second Linear applied to the first one's output itself", _left_out),)

    out: Ref = THIS
    x: Ref
    module: ModuleRef
    activation: str

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        hidden, actual, name = s.t(self.x), s.t(self.out), s.name(self.module)
        family = _family(self.activation)
        first_detail = ""
        for activation in family:
            passed, detail = close(actual, linear(s, self.module, ACTIVATIONS[activation](hidden)),
                                   f"recomputed {name}({activation}(x)) with x the first Linear's output")
            if passed:
                return f"equals {name} applied to {activation} of the first Linear's output", True, detail
            first_detail = first_detail or detail
        return f"equals {name} applied to {family[0]} of the first Linear's output", False, first_detail
