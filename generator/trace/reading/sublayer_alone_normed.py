"""A post-norm residual step whose LayerNorm the marked line called on a sublayer's output alone (``src =
self.norm1(self.self_attn(src, src, src)[0])``, the residual dropped), the sublayer output shown by no snapshot: the
step's own check, bound to the LayerNorm's input as the sum's stand-in, passed as a LayerNorm of whatever it read.
The LayerNorm is nn.LayerNorm or a class of the user's own read as one (a gain and a bias of the input's width).
Where the catalogue's operands are the block's input (a captured step) and that sublayer output, and a Linear or an
attention module the line called gave exactly the LayerNorm's input, which is not that input plus it, the step is read
with the call's output as its only operand (checks/sublayer.py): a correct post-norm block's LayerNorm reads the
stream plus the sublayer output, never the output alone (the stream is never zero), so it fails with the bug form
"residual dropped". An ``nn.Dropout``'s output stands for the sublayer's where the sum is an unmarked statement
feeding the line (``src = self.dropout1(src2)`` above ``src = self.norm1(src)  # Snapshot #15``: DETR's own form; the
child hands that statement's calls to the line, feeders.py): its output is the tensor the LayerNorm read, whatever mask
a training-mode dropout drew. Anything else is bound as before."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from transformer_trace.checks import ResidualLayerNorm, close
from transformer_trace.checks.sublayer import SublayerFromCall
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.child.protocol import FED_AT, ModuleKind
from transformer_trace.trace.reading.call_layout import in_order
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.rebuilt import looks_like, rebuild
from transformer_trace.trace.reading.weights import Bound, Given, holds_output

SUBLAYERS = (ModuleKind.LINEAR, ModuleKind.MULTIHEAD_ATTENTION, ModuleKind.DROPOUT)


def _is_norm(call: ModuleCall) -> bool:
    """nn.LayerNorm, or a module of the user's own read as one (a gain and a bias: the Annotated Transformer's
    class, henok3878's)."""
    return call.kind == ModuleKind.LAYER_NORM or (call.kind == ModuleKind.USER
                                                  and looks_like(ModuleKind.LAYER_NORM, call))


def _first(tensors: Sequence[torch.Tensor | None]) -> torch.Tensor | None:
    first = tensors[0] if tensors else None
    return first if isinstance(first, torch.Tensor) and first.is_floating_point() else None


def sublayer_alone_normed(check: Any, calls: Sequence[ModuleCall], source: TensorDict, main: torch.Tensor | None,
                          order: tuple[int, ...] | None,
                          as_called: Callable[[torch.Tensor | None], torch.Tensor | None]) -> Bound | None:
    """``check`` (a post-norm residual step of two operands, the stream captured, the sublayer output not) read with
    the output of the sublayer call that alone gave the LayerNorm's input, the stream left out; None where the line
    shows no such call (the module docstring). ``as_called`` reads a call's tensor as the run reads its steps (an
    ``nn.MultiheadAttention`` of sequence-first code gives (positions, batch, …))."""
    if not isinstance(check, ResidualLayerNorm) or main is None or len(check.operands) != 2:
        return None
    stream, sublayer = check.operands
    if not source.has(stream) or source.has(sublayer):
        return None
    norm = next((c for c in calls if _is_norm(c) and (out := _first(c.outputs)) is not None
                 and _first(c.inputs) is not None and holds_output(out, main)), None)
    module = rebuild(norm, ModuleKind.LAYER_NORM) if norm is not None else None
    read = _first(norm.inputs) if norm is not None else None
    if module is None or read is None:
        return None
    normed, carried = in_order(read, order), source.t(stream).double()
    for call in calls:
        output = as_called(_first(call.outputs)) if call.kind in SUBLAYERS else None
        if output is None:
            continue
        output = in_order(output, order)
        if output.shape != normed.shape or output.shape != carried.shape:
            continue
        alone = close(normed.double(), output.double(), "")[0]
        if not alone or close(normed.double(), carried + output.double(), "")[0]:
            continue  # the LayerNorm read something else, or the sum itself
        fed_at = call.attrs.get(FED_AT)
        caller = "the line" if fed_at is None else f"line {fed_at} (the statement whose output the line read)"
        name = f"{source.name(sublayer)}@{call.module}.output"
        given = Given(source, {**source.tensors, name: output}, modules={source.name(check.module): module})
        return Bound(SublayerFromCall(out=check.out, operands=(Ref(name),), step=check, absent=(source.name(stream),),
                                      called=call.module, caller=caller), given, None,
                     f"{source.name(sublayer)} taken from the output of the {call.module} {caller} called, the "
                     f"LayerNorm's input (no captured snapshot shows it)")
    return None
