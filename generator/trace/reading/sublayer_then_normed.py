"""A post-norm block's end made on one line that calls its sublayer and its LayerNorm (``return self.layer_norm(
self.net(x) + x)``, the MLP an ``nn.Sequential`` inside the call: augustwester/transformer-xl), neither the second
residual sum nor the MLP output marked. The block-output check (checks/post_norm.py ``ResidualOrPostNorm``) then had
nothing to read: the sum it compares with is not captured, and the LayerNorm's own input would pass whatever was added.
Read instead as the post-norm residual step it is (``ResidualLayerNorm``), its operands the catalogue's way: the
normalised stream (a captured step) and the sublayer output, the output of the last Linear or module of the user's the
line called whose shape is the step's and which is not the stream; the LayerNorm the line called whose output is the
step gives the weights. A correct block is then the LayerNorm of their sum, and a residual dropped (the LayerNorm of
the sublayer output alone) is named at its own step."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from transformer_trace.checks import ResidualLayerNorm
from transformer_trace.checks.post_norm import ResidualOrPostNorm
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.call_layout import in_order
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.rebuilt import rebuild
from transformer_trace.trace.reading.same_tensors import same_tensor
from transformer_trace.trace.reading.weights import Bound, Given, holds_output

SUBLAYERS = (ModuleKind.LINEAR, ModuleKind.USER)


def _tensor(tensors: Sequence[torch.Tensor | None]) -> torch.Tensor | None:
    first = tensors[0] if tensors else None
    return first if isinstance(first, torch.Tensor) and first.is_floating_point() else None


def sublayer_then_normed(check: Any, calls: Sequence[ModuleCall], source: TensorDict, main: torch.Tensor | None,
                         order: tuple[int, ...] | None) -> Bound | None:
    """``check`` (a block output read as pre-norm or post-norm, its second residual sum not captured) bound to the
    normalised stream and the sublayer output the line's calls gave, and to the LayerNorm that made the step; None
    where the sum or the sublayer output is captured, or the line shows no such calls (the module docstring)."""
    if not isinstance(check, ResidualOrPostNorm) or main is None or check.module is None \
            or len(check.operands) != 2 or source.has(check.source):
        return None
    stream, sublayer = check.operands
    if not source.has(stream) or source.has(sublayer):
        return None
    norm = next((c for c in calls if c.kind == ModuleKind.LAYER_NORM and (out := _tensor(c.outputs)) is not None
                 and _tensor(c.inputs) is not None and holds_output(out, main)), None)
    module = rebuild(norm, ModuleKind.LAYER_NORM) if norm is not None else None
    if norm is None or module is None:
        return None
    carried = source.t(stream)
    outputs = [(call, in_order(output, order)) for call in calls if call.kind in SUBLAYERS and call is not norm
               and (output := _tensor(call.outputs)) is not None]
    found = [(call, output) for call, output in outputs if tuple(output.shape) == tuple(carried.shape)
             and not same_tensor(output.double(), carried)]
    if not found:
        return None
    call, output = found[-1]  # the last one: the sublayer's output layer (fc2 after fc1, inside an nn.Sequential)
    name = f"{source.name(sublayer)}@{call.module}.output"
    given = Given(source, {**source.tensors, name: output}, modules={source.name(check.module): module})
    return Bound(ResidualLayerNorm(out=check.out, operands=(stream, Ref(name)), module=check.module), given, None,
                 f"the weights of the {norm.module} the line called; {source.name(sublayer)} taken from the output of "
                 f"the {call.module} it called (no captured snapshot shows it, nor the sum the LayerNorm read)")
