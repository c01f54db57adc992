"""A residual sum whose sublayer output went through an activation after its last Linear (round twenty's DeiT: its MLP
applies GELU after fc2 as well as after fc1, so the block adds GELU(fc2(·)) to the stream): the recorded sum is the
stream plus an activation of the family applied to the captured sublayer output. The transformer's sublayers end on a
Linear (the attention's output projection, the MLP's second Linear), so no correct form fits it: a bug form, named
with the activation that fits."""

from __future__ import annotations

from typing import Any

from transformer_trace.checks.base import close
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.checks.layers import GATES
from transformer_trace.sources import TensorSource

ACTIVATED_OUTPUT = "an activation after the sublayer's output Linear"


def _activated_output(check: Any, s: TensorSource) -> Fit | None:
    """The sum with one captured sublayer output (any operand but the first, the stream) activated; None where an
    operand is not captured or the shapes differ."""
    operands = tuple(getattr(check, "operands", ()))
    if len(operands) < 2 or not all(s.has(ref) for ref in operands):
        return None
    out, values = s.t(check.out).double(), [s.t(ref).double() for ref in operands]
    if any(value.shape != out.shape for value in values):
        return None
    for index in range(1, len(operands)):
        if "@" in s.name(operands[index]):  # a module call's tensor stood in (a Linear inside the MLP the line
            continue  # called): the module's own output, activation included, may be what was added, a correct form
        rest = sum(value for k, value in enumerate(values) if k != index)
        activated = s.name(operands[index])
        for name, activation in GATES.items():
            fits, detail = close(out, rest + activation(values[index]), f"vs the sum with {name}({activated})")
            if fits:
                return Fit(True, f"your {s.name(check.out)} adds {name}({activated}), not {activated}: the sublayer's "
                                 f"output went through a {name} after its last Linear, where the sum takes it as the "
                                 f"Linear gave it ({detail})")
    return Fit(False, "no activation of a sublayer output fits")


ACTIVATED_SUBLAYER = BugForm(ACTIVATED_OUTPUT, "the stream plus an activation (GELU, ReLU, SiLU, tanh, sigmoid) of the "
                             "sublayer output", _activated_output)
