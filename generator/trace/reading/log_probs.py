"""A logits step marked on a line that returns the log-softmax of a Linear it called (``torch.log_softmax(
self.proj(x), dim=-1)``, a translator's generator): no call's output is the step, so the declared binding finds no
weights. The Linear is the last one the line called whose output some log-softmax (over any axis) makes the step from;
the step is then checked as log-probabilities of it (checks/log_probs.py), over which axis being the check's matter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from transformer_trace.checks import LinearOf, close
from transformer_trace.checks.log_probs import LogProbsOfLinear
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.call_layout import in_order
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.rebuilt import rebuild
from transformer_trace.trace.reading.weights import Bound, Given, holds_output, present


def log_softmax_of_call(check: Any, calls: Sequence[ModuleCall], source: TensorDict, main: Any,
                        order: tuple[int, ...] | None = None) -> Bound | None:
    """``check`` (a ``LinearOf``) read as ``LogProbsOfLinear`` of the last Linear the line called, where a log-softmax
    of its output over some axis is the step; None otherwise (its output is the step: the declared binding's)."""
    if type(check) is not LinearOf or check.activation or check.index or main is None:
        return None
    linears = [c for c in calls if c.kind == ModuleKind.LINEAR and c.inputs and c.outputs
               and c.inputs[0] is not None and c.outputs[0] is not None
               and tuple(c.outputs[0].shape) == tuple(main.shape)]
    if not linears or holds_output(present(linears[-1].outputs[0]), main):
        return None
    call = linears[-1]
    logits, step = present(call.outputs[0]).double(), present(main).double()
    if not any(close(step, torch.log_softmax(logits, dim=axis), "")[0] for axis in range(logits.dim())):
        return None
    module = rebuild(call, ModuleKind.LINEAR)
    if module is None:
        return None
    tensors = dict(source.tensors)
    x = check.x
    if not source.has(x):
        x = Ref(f"{source.name(check.x)}@{call.module}.input")
        tensors[x.template] = in_order(present(call.inputs[0]), order)
    return Bound(LogProbsOfLinear(out=check.out, x=x, module=check.module),
                 Given(source, tensors, modules={source.name(check.module): module}),
                 note=f"the weights of the {call.module} it called, its output log-softmaxed on the line")
