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
    matrices = [p for p in params if p.dim() == 2]
    vectors = [p for p in params if p.dim() == 1]
    x = call.inputs[0] if call.inputs else None
    y = call.outputs[0] if call.outputs else None
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
