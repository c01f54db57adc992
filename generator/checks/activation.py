"""The MLP's hidden layer: GELU of the first Linear (the catalogues' fc1), or, where it fits instead, GELU's tanh
approximation, a ReLU or a SiLU; without fc1's weights, every value in GELU's range. A gated MLP's hidden layer
(GeGLU, SwiGLU) is read through the factors its line multiplied (checks/gated.py)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F

from transformer_trace.checks.base import GELU_MINIMUM, THIS, Check, TraceUse, close, linear
from transformer_trace.checks.evidence import Property
from transformer_trace.sources import ModuleRef, NotCheckable, Ref, TensorSource
from transformer_trace.trace.child.protocol import ModuleKind


def _gelu_range(check: Any, s: TensorSource) -> str | None:
    low = float(s.t(check.out).min())
    if low >= GELU_MINIMUM or _another_activation(check, s):
        return None
    return f"your {s.name(check.out)} has a value {low:.4f}, below GELU's minimum −0.1700: it is not a GELU's output"


def _another_activation(check: Any, s: TensorSource) -> bool:
    """Whether the step is a monotone function of fc1's output, value by value, other than that output itself: an
    activation the family lacks (tanh, a leaky ReLU), a form, not evidence of a bug (the activation left out is)."""
    try:
        pre = linear(s, check.module, s.t(check.x)).double().flatten()
    except NotCheckable:  # no weights: GELU's range is all that is known
        return False
    out = s.t(check.out).double().flatten()
    if pre.shape != out.shape or close(out, pre, "")[0]:
        return False
    rising = out[torch.argsort(pre)]
    return bool((rising[1:] - rising[:-1] >= -1e-5 * (float(out.abs().max()) + 1.0)).all())


@dataclass(frozen=True, kw_only=True)
class GeluOfLinear(Check):
    """``out`` is GELU of the Linear ``module`` applied to ``x``; without the weights, every value lies in GELU's
    range."""
    CLAIM = "is GELU of a Linear layer applied to its input"

    WEIGHTS_OPTIONAL = True
    # the locals its line read besides: a gated MLP's two factors (trace/reading/gated_mlp.py)
    TRACE = TraceUse(calls={"module": (ModuleKind.LINEAR, "module"), "x": (ModuleKind.LINEAR, "input")},
                     reads_locals=True, activated=True)
    PROPERTIES = (Property("a GELU's output is at least −0.17", "the smallest value", _gelu_range),)

    out: Ref = THIS
    x: Ref
    module: ModuleRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        try:
            expected = F.gelu(linear(s, self.module, s.t(self.x)))
        except NotCheckable:  # no weights: what GELU's output must satisfy whatever fc1 computed
            low = float(s.t(self.out).min())
            return "values lie in GELU's range (≥ −0.17)", low >= GELU_MINIMUM, (
                f"smallest value {low:.4f}; GELU never goes below −0.1700 (without the weights of the Linear before "
                "it, a necessary condition only)")
        passed, detail = close(s.t(self.out), expected, "recomputed GELU(x·W₁ᵀ + b₁)")
        if passed:
            return "equals GELU(fc1(input))", True, detail
        pre = linear(s, self.module, s.t(self.x))
        # the activation family: GPT-2's and minGPT's tanh GELU, the paper's FFN's ReLU, SiLU
        for claim, activation in (("GELU(fc1(input)), GELU's tanh approximation", partial(F.gelu, approximate="tanh")),
                                  ("ReLU(fc1(input)): the MLP's activation is a ReLU", F.relu),
                                  ("SiLU(fc1(input)): the MLP's activation is a SiLU", F.silu)):
            other, other_detail = close(s.t(self.out), activation(pre), f"recomputed {claim.split(':')[0]}")
            if other:
                return f"equals {claim}", True, other_detail
        return "equals GELU(fc1(input))", passed, detail
