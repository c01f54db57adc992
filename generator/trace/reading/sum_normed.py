"""A residual sum whose operands were captured by name but whose sum is no variable (issue 40, round nineteen's
encoder–decoder: ``out2 = self.norm1(out1 + x)  # Snapshot #14: x, out1``): the sum is what the LayerNorm the marked
line called received, so it is read from that call's input and checked against the step's own operands (a residual
dropped or added twice is then seen there). Only a norm whose input is none of the operands (a pre-norm line normalises
its stream, an operand, before the sublayer) and whose output no other call on the line reads (it ends the line)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch

from transformer_trace.checks import SumOf
from transformer_trace.checks.base import added
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.binding import Bound, Given
from transformer_trace.trace.reading.call_layout import in_order
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.same_tensors import equal_tensors


def _looks_like_norm(call: ModuleCall) -> bool:
    """A LayerNorm, or a module of the user's that looks like one (a gain and a bias of one axis each)."""
    params = [p for p in call.params.values() if isinstance(p, torch.Tensor)]
    return call.kind == ModuleKind.LAYER_NORM or (call.kind == ModuleKind.USER and 0 < len(params) <= 2
                                                  and all(p.dim() == 1 for p in params))


def sum_normed_on_line(check: SumOf, calls: Sequence[ModuleCall], source: TensorDict,
                       order: tuple[int, ...] | None) -> Bound | None:
    """``check`` with its sum read from the input of the one norm the line called, where every operand is captured
    and the sum is not; None otherwise."""
    if source.has(check.out) or len(check.operands) < 2 or not all(source.has(ref) for ref in check.operands):
        return None
    operands = [source.t(ref) for ref in check.operands]
    try:
        shape = tuple(added(operands).shape)
    except RuntimeError:  # operands that do not broadcast: no sum to read
        return None
    norms = [call for call in calls if _looks_like_norm(call) and call.inputs and call.outputs
             and isinstance(call.inputs[0], torch.Tensor) and tuple(call.inputs[0].shape) == shape]
    if len(norms) != 1:
        return None
    norm = norms[0]
    received = norm.inputs[0]
    if not isinstance(received, torch.Tensor) or norm.outputs[0] is None:
        return None
    if any(equal_tensors(in_order(received, order), operand) for operand in operands):
        return None  # the norm reads an operand (a pre-norm line's stream): not the sum
    if any(other is not norm and other.inputs and equal_tensors(other.inputs[0], norm.outputs[0]) for other in calls):
        return None  # its output feeds a sublayer on the line: a pre-norm line, whose sum is not normalised here
    name = f"{source.name(check.out)}@{norm.module}.input"
    given = Given(source, {**source.tensors, name: in_order(received, order)})
    return Bound(dataclasses.replace(check, out=Ref(name)), given, None,
                 f"the sum taken from the input of the {norm.module} the line called (the sum is no variable of yours)")
