"""A module of the user's own class read as a projection from its parameters, whatever its class is called: whisper's
``Linear(nn.Linear)`` with its own ``forward``, GPT-2's ``Conv1D`` (its weight stored (in, out)), a tensordot layer. A
call is one when its one weight matrix (and its bias, if it has one) reproduces the call's own output as an affine map
of its input, x·Wᵀ + b (or x·W + b): the output decides, never the class's name, so a module that does anything more
(a scale, an activation, a dropout that was active) is not taken for one."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import torch

from transformer_trace.checks import close


def user_projection(call: Any) -> SimpleNamespace | None:
    """The call's module as the checks read a Linear (``weight`` (out, in), ``bias`` or None), where its parameters
    reproduce its output; None where they do not, or it has not one weight matrix and at most a bias."""
    params = [p for p in call.params.values() if isinstance(p, torch.Tensor)]
    x = call.inputs[0] if call.inputs else None
    y = call.outputs[0] if call.outputs else None
    if (contracted := _contracting(params, x, y)) is not None:
        return SimpleNamespace(weight=contracted[0], bias=contracted[1], traced=True, called=call.module)
    matrices = [p for p in params if p.dim() == 2]
    vectors = [p for p in params if p.dim() == 1]
    if (len(matrices) != 1 or len(vectors) > 1 or len(params) != len(matrices) + len(vectors)
            or not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor) or x.dim() == 0
            or not x.is_floating_point() or not y.is_floating_point()):
        return None
    matrix, bias = matrices[0].detach(), (vectors[0].detach() if vectors else None)
    for weight in (matrix, matrix.T):  # stored (out, in) as nn.Linear does, or (in, out) as GPT-2's Conv1D does
        if weight.shape[1] != x.shape[-1] or tuple(y.shape) != (*x.shape[:-1], weight.shape[0]):
            continue
        if bias is not None and bias.shape[0] != weight.shape[0]:
            continue
        recomputed = torch.nn.functional.linear(x.double(), weight.double(), None if bias is None else bias.double())
        if close(recomputed, y.double(), "")[0]:
            return SimpleNamespace(weight=weight.contiguous(), bias=bias, traced=True, called=call.module)
    return None


def _contracting(params: list[torch.Tensor], x: Any, y: Any) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """A tensordot layer over several trailing axes of its input into one output axis (asyml's ``LinearGeneral`` out
    projection: weight (h, hs, C), ``tensordot(x, w, dims=([2, 3], [0, 1])) + b`` on (B, T, h, hs)): its weight as a
    Linear's (out, in) over those axes flattened, and its bias, where they reproduce the output; else None."""
    weights = [p for p in params if p.dim() > 2]
    vectors = [p for p in params if p.dim() == 1]
    if (len(weights) != 1 or len(vectors) > 1 or len(params) != 1 + len(vectors) or not isinstance(x, torch.Tensor)
            or not isinstance(y, torch.Tensor) or not x.is_floating_point() or not y.is_floating_point()):
        return None
    weight, bias = weights[0].detach(), (vectors[0].detach() if vectors else None)
    axes = weight.dim() - 1
    lead = tuple(x.shape[:-axes])
    if tuple(x.shape[-axes:]) != tuple(weight.shape[:-1]) or tuple(y.shape) != (*lead, weight.shape[-1]):
        return None
    if bias is not None and bias.shape[0] != weight.shape[-1]:
        return None
    matrix = weight.reshape(-1, weight.shape[-1]).T  # (out, in): the contracted axes flattened in their order
    recomputed = torch.nn.functional.linear(x.double().reshape(*lead, -1), matrix.double(),
                                            None if bias is None else bias.double())
    return (matrix.contiguous(), bias) if close(recomputed, y.double(), "")[0] else None
