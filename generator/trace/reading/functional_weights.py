"""An attention's output projection written as functional code, ``x @ W + b`` (or ``F.linear(x, W, b)``), its weight
and bias read from a local the marked line subscripts (``linear(ctx.transpose(1, 2).reshape(B, N, C), p["proj"])``:
reading/capture.py ``names_read`` copies the entry): no module is called, and the projection's input is on no
snapshot. With the context per head captured (``heads``, (B, h, T, hs)), the step is checked as that projection of the
heads merged back, the weight's orientation (W or Wᵀ) being the one that reproduces the step from the heads merged in
either way the merge may have run; where neither does, nothing is bound (the step stays as it was). The heads merged
without moving their axis back then fail the check, and its bug form names them (checks/head_merge.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import torch
import torch.nn.functional as F

from transformer_trace.checks import close
from transformer_trace.checks.head_merge import merged
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.weights import Bound, Given


def _weights_read(calls: Sequence[ModuleCall], width: int) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """The (name, weight, bias) pairs the line read from locals: a 2-D weight and a bias of the step's width."""
    found = []
    for call in calls:
        if call.kind != ModuleKind.LOCAL or len(call.outputs) != 2:
            continue
        weight, bias = call.outputs
        if (isinstance(weight, torch.Tensor) and isinstance(bias, torch.Tensor) and weight.dim() == 2
                and weight.is_floating_point() and tuple(bias.shape) == (width,)):
            found.append((call.module, weight.double(), bias.double()))
    return found


def functional_projection(check: Any, calls: Sequence[ModuleCall], source: TensorDict) -> Bound | None:
    """``check`` (a projection of the heads, ``ProjectionOfHeads``) bound to the weight and bias its line read from a
    local, its input the heads merged back (the module docstring); None where that does not apply."""
    heads_ref, out, x = getattr(check, "heads", None), getattr(check, "out", None), getattr(check, "x", None)
    if not isinstance(heads_ref, Ref) or not isinstance(out, Ref) or not isinstance(x, Ref) or source.has(x) \
            or not source.has(heads_ref) or not source.has(out):
        return None
    heads, step = source.t(heads_ref), source.t(out)
    if heads.dim() != 4 or step.dim() != 3 or heads.numel() != step.shape[0] * step.shape[1] * heads.shape[1] * \
            heads.shape[3]:
        return None
    together = merged(heads)
    readings = (together, heads.reshape(together.shape))  # merged back, or reshaped without moving the axis
    for name, weight, bias in _weights_read(calls, step.shape[-1]):
        for oriented in (weight.T, weight):  # x @ W + b: W is (in, out); F.linear: (out, in)
            if oriented.shape != (step.shape[-1], together.shape[-1]):
                continue
            if any(close(step, F.linear(read, oriented, bias), "")[0] for read in readings):
                layer = SimpleNamespace(weight=oriented, bias=bias)
                input_name = f"{source.name(x)}@merged"
                given = Given(source, {**source.tensors, input_name: together},
                              modules={source.name(check.module): layer})
                form = "" if oriented is weight else " (x @ W + b)"
                note = (f"the weight and bias the line read from `{name}`{form}; its input, which no snapshot shows, "
                        f"the heads of {source.name(heads_ref)} merged back")
                said = ((source.name(check.module), f"the projection with `{name}`"),
                        (input_name, f"the heads of {source.name(heads_ref)} merged back"))
                return Bound(dataclasses.replace(check, x=Ref(input_name)), given, None, note, said=said)
    return None
