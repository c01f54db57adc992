"""A residual step's sublayer output taken from the module the marked line called (issue 40: evidence already captured
is used before a step is called not checkable). ``x = x + self.attn(self.attn_ln(x))[0]`` with no snapshot on the
attention's output: the attention module's call (a module of the user's, a Linear, an nn.MultiheadAttention) gave it,
so the residual sum is checked with that output as its sublayer operand (checks/sublayer.py). A call that wraps the
residual itself (a SublayerConnection, called with the stream and returning the step) is looked through to the
sublayer it called; a LayerNorm's output is never taken for the sublayer's. Where the stream the sublayer was added
to is not captured as the catalogue's operands (a pre-norm block's MLP residual with the attention's output inside an
``nn.MultiheadAttention``), it is the input of the LayerNorm the line called, where that equals a captured step (S16,
the attention's residual sum). Sequence-first code's calls are read in the page's layout (its tensors' axes as the
step's own value was permuted into the catalogue's)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from transformer_trace.checks import ResidualLayerNorm, SumOf, close
from transformer_trace.checks.sublayer import SublayerFromCall
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.call_layout import in_order
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.weights import Bound, CallSource

SUBLAYER_KINDS = (ModuleKind.USER, ModuleKind.LINEAR, ModuleKind.MULTIHEAD_ATTENTION)


def sublayer_bound(check: Any, calls: Sequence[ModuleCall], source: TensorDict, main: torch.Tensor | None,
                   order: tuple[int, ...] | None = None) -> Bound | None:
    """``check`` (a residual sum, or a LayerNorm of one) read with its last operand, the sublayer output no snapshot
    shows, from the call of the marked line that gave it; None where it is captured, or no call gives it. ``main`` is
    the step's value as captured; ``order`` the axis order the checks read it in (reading/call_layout.py)."""
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
    tensors = {**source.tensors, name: in_order(call.outputs[0], order)}
    kept: tuple[Ref, ...] = (*(ref for ref in operands[:-1] if source.has(ref)), Ref(name))
    absent = tuple(source.name(ref) for ref in operands[:-1] if not source.has(ref))
    stream = _stream_captured(calls, main, order, source) if absent else None
    if stream is not None:  # the stream the sublayer is added to, as the line's LayerNorm read it: a captured step
        kept, absent = (Ref(stream), Ref(name)), ()
    bound = CallSource.over(source, tensors)
    out = getattr(check, "out")
    how = (f"; the stream it is added to as {stream}, the input of the LayerNorm the line called"
           if stream is not None else "")
    return Bound(SublayerFromCall(out=out, operands=kept, step=check, absent=absent, called=call.module), bound, None,
                 f"{missing} taken from the output of the {call.module} the line called (no captured snapshot shows "
                 f"it){how}")


def _stream_captured(calls: Sequence[ModuleCall], main: torch.Tensor, order: tuple[int, ...] | None,
                     source: TensorDict) -> str | None:
    """The record name of the captured step equal to the input of the one LayerNorm the line called on a tensor of
    the step's shape (``x + self.mlp(self.ln_2(x))``: ``x``, the stream); None where there is not exactly one."""
    read_by_norms = [call.inputs[0] for call in calls if (call.kind == ModuleKind.LAYER_NORM or _norm_like(call))
                     and call.inputs and isinstance(call.inputs[0], torch.Tensor)
                     and tuple(call.inputs[0].shape) == tuple(main.shape)]
    if len(read_by_norms) != 1 or read_by_norms[0] is None:
        return None
    read = in_order(read_by_norms[0], order).double()
    equal = [name for name, tensor in source.tensors.items() if isinstance(tensor, torch.Tensor)
             and tensor.shape == read.shape and tensor.is_floating_point() and close(tensor.double(), read, "")[0]]
    return equal[0] if equal else None


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
