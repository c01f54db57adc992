"""A post-norm residual step whose LayerNorm the marked line called on a sum it made, read with that sum's operands
(issue 40: a red verdict names the bug at its own step). ``x = self.add_and_norm(x, mha_out)`` with a module of the
user's whose forward is ``self.layer_norm(x + residual)``, or ``x = self.norm1(attention + query)``: the LayerNorm's
input is the sum, so the step read as "the LayerNorm of its own input" passes whatever was added, a stream dropped or
zeroed (``add_and_norm(mha_out, 0 * x)``) included. The tensors added are the wrapper's arguments of the step's shape
(a module of the user's whose output is the step, called with two or more), else the tensors the line read, where the
line called no sublayer itself; the catalogue's relations say which is which: the argument equal to the stream (the
captured first operands) is the stream, the one other that is not all zero is the sublayer output. The step's own
check then runs with those operands (checks/post_norm.py ``AddedThenNormed``). Where they are not told apart (two
tensors besides the stream, one tensor alone, which may be the sum itself: ``x = self.norm(x)``), nothing here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from transformer_trace.checks import ResidualLayerNorm
from transformer_trace.checks.post_norm import AddedThenNormed
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.child.protocol import FED_AT, ModuleKind
from transformer_trace.trace.reading.call_layout import in_order
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.rebuilt import looks_like, rebuild
from transformer_trace.trace.reading.same_tensors import same_tensor
from transformer_trace.trace.reading.weights import Bound, Given

SUBLAYERS = (ModuleKind.USER, ModuleKind.LINEAR, ModuleKind.MULTIHEAD_ATTENTION)


def added_then_normed(check: Any, calls: Sequence[ModuleCall], source: TensorDict, main: torch.Tensor | None,
                      order: tuple[int, ...] | None = None) -> Bound | None:
    """``check`` (a post-norm residual step) read with the stream and the sublayer output the line added, the LayerNorm
    from the call that made the step (its own weights); None where the sublayer output is captured, the stream is
    not, no LayerNorm call of the line made the step, or the tensors added do not tell the two apart. ``order``: the
    axis order the checks read the step in (reading/call_layout.py)."""
    if not isinstance(check, ResidualLayerNorm) or main is None or len(check.operands) < 2:
        return None
    streams, sublayer = check.operands[:-1], check.operands[-1]
    if source.has(sublayer) or not all(source.has(ref) for ref in streams):
        return None
    norm = next((call for call in reversed(calls) if _is_norm(call) and call.outputs
                 and same_tensor(call.outputs[0], main)
                 and call.inputs and isinstance(call.inputs[0], torch.Tensor)), None)
    module = rebuild(norm, ModuleKind.LAYER_NORM) if norm is not None else None
    if norm is None or module is None or not isinstance(summed := norm.inputs[0], torch.Tensor):
        return None
    found = _added(calls, norm, main)
    if found is None:
        return None
    where, tensors = found
    captured = [source.t(ref) for ref in streams]
    read = [(said, in_order(tensor, order).double()) for said, tensor in tensors]
    others = [(said, tensor) for said, tensor in read if not any(same_tensor(tensor, stream) for stream in captured)
              and bool(tensor.ne(0).any())]  # a zeroed tensor adds nothing: it is no sublayer's output
    if len(others) != 1:
        return None
    said, tensor = others[0]
    missing = source.name(sublayer)
    name, normed = f"{missing}, {said} {where}", f"{source.name(check.out)}@{norm.module}.input"
    given = Given(source, {**source.tensors, name: tensor, normed: in_order(summed, order)},
                  modules={source.name(check.module): module})
    return Bound(AddedThenNormed(out=check.out, operands=(*streams, Ref(name)), normed=Ref(normed), step=check),
                 given, None, f"the weights of the {norm.module} it called; {missing} taken from {said} {where}, the "
                 f"one tensor added that is not the stream ({', '.join(source.name(ref) for ref in streams)}, "
                 "captured) nor zero (no captured snapshot shows it)")


def _added(calls: Sequence[ModuleCall], norm: ModuleCall,
           main: torch.Tensor) -> tuple[str, list[tuple[str, torch.Tensor]]] | None:
    """Where the tensors the norm's sum was made of were read, in words, and each with its name: a module of the
    user's that returned the step from two or more arguments of its shape (an add-and-norm), else the two or more
    tensors of that shape the line read, where it called no sublayer of its own; None where neither."""
    wrappers = [call for call in calls if call.kind == ModuleKind.USER and call is not norm and call.depth < norm.depth
                and call.outputs and same_tensor(call.outputs[0], main)]
    if wrappers:
        wrapper = min(wrappers, key=lambda call: call.depth)
        arguments = [(f"argument {i + 1}", t) for i, t in enumerate(wrapper.inputs) if t is not None
                     and _of_shape(t, main)]
        return (f"of the {wrapper.module} the line called", arguments) if len(arguments) >= 2 else None
    if norm.depth != 1 or any(call.kind in SUBLAYERS and call is not norm and call.outputs
                              and call.attrs.get(FED_AT) is None and _of_shape(call.outputs[0], main)
                              for call in calls):
        return None  # the sublayer ran on the line (not on a statement feeding it, feeders.py): residuals.py reads it
    read = [(f"`{call.module}`", t) for call in calls if call.kind == ModuleKind.LOCAL and len(call.outputs) == 1
            and (t := call.outputs[0]) is not None and _of_shape(t, main)]
    return ("as the line read it", read) if len(read) >= 2 else None


def _is_norm(call: ModuleCall) -> bool:
    return call.kind == ModuleKind.LAYER_NORM or (call.kind == ModuleKind.USER
                                                  and looks_like(ModuleKind.LAYER_NORM, call))


def _of_shape(tensor: Any, main: torch.Tensor) -> bool:
    return isinstance(tensor, torch.Tensor) and tensor.is_floating_point() and tuple(tensor.shape) == tuple(main.shape)


