"""A residual step's sublayer output taken from the module the marked line called (issue 40: evidence already captured
is used before a step is called not checkable). ``x = x + self.attn(self.attn_ln(x))[0]`` with no snapshot on the
attention's output: the attention module's call (a module of the user's, a Linear, an nn.MultiheadAttention) gave it,
so the residual sum is checked with that output as its sublayer operand (checks/sublayer.py). A call that wraps the
residual itself (a SublayerConnection, called with the stream and returning the step) is looked through to the
sublayer it called; a LayerNorm's output is never taken for the sublayer's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from transformer_trace.checks import ResidualLayerNorm, SumOf, close
from transformer_trace.checks.sublayer import SublayerFromCall
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.weights import Bound, CallSource

SUBLAYER_KINDS = (ModuleKind.USER, ModuleKind.LINEAR, ModuleKind.MULTIHEAD_ATTENTION)


def sublayer_bound(check: Any, calls: Sequence[ModuleCall], source: TensorDict,
                   main: torch.Tensor | None) -> Bound | None:
    """``check`` (a residual sum, or a LayerNorm of one) read with its last operand, the sublayer output no snapshot
    shows, from the call of the marked line that gave it; None where it is captured, or no call gives it."""
    if not isinstance(check, (SumOf, ResidualLayerNorm)) or main is None or not check.operands:
        return None
    operands = check.operands
    if source.has(operands[-1]):
        return None
    captured = [source.t(ref) for ref in operands[:-1] if source.has(ref)]
    call = _sublayer_call(calls, main, captured)
    if call is None:
        return None
    missing = source.name(operands[-1])
    name = f"{missing}@{call.module}.output"
    kept = (*(ref for ref in operands[:-1] if source.has(ref)), Ref(name))
    absent = tuple(source.name(ref) for ref in operands[:-1] if not source.has(ref))
    bound = CallSource.over(source, {**source.tensors, name: call.outputs[0]})
    out = getattr(check, "out")
    return Bound(SublayerFromCall(out=out, operands=kept, step=check, absent=absent, called=call.module), bound, None,
                 f"{missing} taken from the output of the {call.module} the line called (no captured snapshot shows "
                 "it)")


def _sublayer_call(calls: Sequence[ModuleCall], main: torch.Tensor, captured: list[torch.Tensor]) -> Any:
    """The call whose first output is the sublayer's: of the step's shape, no LayerNorm's, not a call that returns
    the step from the stream it was given (a wrapper adding the residual inside); the shallowest, then the last."""
    found = []
    for call in calls:
        output = call.outputs[0] if call.outputs else None
        if (call.kind not in SUBLAYER_KINDS or not isinstance(output, torch.Tensor) or not output.is_floating_point()
                or tuple(output.shape) != tuple(main.shape) or _norm_like(call)):
            continue
        if _equal(output, main) and (not captured or any(_equal(t, c) for t in call.inputs for c in captured)):
            continue  # the step itself, from the stream: a wrapper (or, without the stream captured, cannot tell)
        found.append(call)
    if not found:
        return None
    depth = min(call.depth for call in found)
    return [call for call in found if call.depth == depth][-1]


def _norm_like(call: Any) -> bool:
    params = [p for p in call.params.values() if isinstance(p, torch.Tensor)]
    return bool(params) and all(p.dim() == 1 for p in params) and len(params) <= 2


def _equal(a: Any, b: Any) -> bool:
    """Equal within the checks' tolerance (NaN equal to nothing: a step with NaN is no call's output)."""
    return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
            and close(a.double(), b.double(), "")[0])
