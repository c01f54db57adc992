"""A residual step whose sublayer output no snapshot shows, read with the output of the module the marked line called
(``x + self.attn(self.norm(x))``: the attention module's output; trace/reading/residuals.py finds the call). The
step's own check then runs with that output as its last operand. Where other operands are not captured either (the
block's input stream, S08 unmarked), the step is still judged where the evidence allows: if the captured operands
and the call's output alone already make the step, the stream it should carry was left out (a residual dropped:
``x = attn_out``), which no correct form does, since a block's input is never zero. Anything else it cannot tell is
not checkable, never a failure: something after the call (a dropout in training mode, a scale) may change its output
on the way into the sum."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from transformer_trace.checks.base import FAILED, NOT_CHECKABLE, Check, CheckResult, THIS
from transformer_trace.checks.evidence import BUG_FORM, Evidence
from transformer_trace.sources import MissingTensor, NotCheckable, Ref, TensorSource


@dataclass(frozen=True, kw_only=True)
class SublayerFromCall(Check):
    """``step`` (a residual check with ``operands``) read with ``operands`` in their place: the captured ones and the
    called module's output (last); ``absent`` names the operands no snapshot shows besides it."""

    SUBSTITUTES = False  # the step's own check tries its substitutes when it runs

    out: Ref = THIS
    operands: tuple[Ref, ...]
    step: Any = None  # the residual check (SumOf, ResidualLayerNorm ...), a value: its fields are read through it
    absent: tuple[str, ...] = ()
    called: str = "module"  # the class of the module whose output is the last operand, as the message names it
    caller: str = "the line"  # what called it: the marked line, or an unmarked statement feeding it

    def run(self, s: TensorSource) -> CheckResult:
        check = dataclasses.replace(self.step, operands=self.operands)
        if not self.absent:
            result = check.run(s)
            if result.status != FAILED or result.evidence is not None:
                return result
            return _not_checkable(result.name, self.operands[-1], s, "the step does not add up with the output of "
                                  "the module the line called, which something after the call (an activation, a "
                                  "dropout in training mode) may change on its way into the sum")
        try:
            claim, holds, detail = check.verify(s)
        except (NotCheckable, RuntimeError, ValueError, IndexError):
            holds, claim, detail = False, "", ""
        if holds:
            left = " and ".join(self.absent)
            called = f"the output of the {self.called} {self.caller} called"
            made = [s.name(ref) for ref in self.operands[:-1]] + [called]
            message = (f"residual dropped: your {s.name(self.out)} is already made by {' and '.join(made)} alone, "
                       f"without {left}, the stream the residual should carry (with it left out: {claim}; {detail})")
            return CheckResult(name=claim, passed=False, status=FAILED, detail=message,
                               evidence=Evidence(BUG_FORM, self.step.LEFT_OUT, message))
        lacks = tuple(MissingTensor(name, "not in the source") for name in self.absent)
        return CheckResult(name=self.step.key(), passed=False, status=NOT_CHECKABLE, missing=self.absent,
                           detail=f"not checkable: the source has no {', '.join(self.absent)}", lacks=lacks)

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        result = self.run(s)
        if not result.checkable:
            raise NotCheckable(result.missing[0] if result.missing else s.name(self.out), result.detail)
        return result.name, result.passed, result.detail


def _not_checkable(name: str, operand: Ref, s: TensorSource, why: str) -> CheckResult:
    lack = NotCheckable(s.name(operand), why)
    return CheckResult(name=name, passed=False, status=NOT_CHECKABLE, missing=(lack.missing,),
                       detail=f"not checkable: {lack}", lacks=(lack,))
