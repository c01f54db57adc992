"""A ViT's patch embeddings (B, N, C) made on the marked line from a patch convolution that ran on an earlier, unmarked
line (CLIP: ``x = self.conv1(x)``, a reshape, then ``x = x.permute(0, 2, 1)  # S04``): the convolution's weights and
the flattened patches were never captured, so the step's own claim (a Linear of each patch) cannot be recomputed, but
the line's own work can (issue 40, point 4: evidence already captured is used). The tensor the line read, as it was
before the line ran, is the convolution's output with its channels first, (B, C, h, w) or (B, C, h·w); the step must
be it with its channels moved last (checks/calls.py ``GridMovedLast``), and one reshaped straight to (B, N, C) mixes
channels and positions, a bug form of its own."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from transformer_trace.checks import LinearOf
from transformer_trace.checks.calls import GridMovedLast
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.weights import Bound, Given, present


def grid_bound(check: Any, calls: Sequence[ModuleCall], source: TensorDict) -> Bound | None:
    """``check`` (a Linear of the flattened patches, neither captured nor called on the line) read as the patch grid
    the line read with its channels moved last; None where the line read no one tensor of the step's values with its
    channels first (the batch first, then the step's width, then axes that multiply to its positions)."""
    if not isinstance(check, LinearOf) or source.has(check.x) or not source.has(check.out):
        return None
    out = source.t(check.out)
    if out.dim() != 3:
        return None
    if calls_a_module(calls):
        return pooled_grid_bound(check, calls, source)
    batch, positions, width = out.shape
    grids = [(call.module, grid) for call in calls if call.kind == ModuleKind.LOCAL and len(call.outputs) == 1
             and isinstance(grid := call.outputs[0], torch.Tensor) and grid.is_floating_point() and grid.dim() >= 3
             and grid.shape[:2] == (batch, width) and math.prod(grid.shape[2:]) == positions]
    if len(grids) != 1:
        return None
    local, grid = grids[0]
    name = f"the patch grid, your `{local}` the line read"
    return Bound(GridMovedLast(out=check.out, grid=Ref(name)), Given(source, {**source.tensors, name: grid}),
                 None, f"the patch grid taken from `{local}`, the tensor the line read (the convolution ran on an "
                 "earlier line)")


def calls_a_module(calls: Sequence[ModuleCall]) -> bool:
    """Whether the line called a module (its own binding reads the call), not only read tensors."""
    return any(call.kind not in (ModuleKind.LOCAL, ModuleKind.READ) for call in calls)


def pooled_grid_bound(check: LinearOf, calls: Sequence[ModuleCall], source: TensorDict) -> Bound | None:
    """``check`` (a Linear of the flattened patches) read as the map the line's max-pool made, its channels moved last,
    where the line's tokens come out of a convolutional tokenizer (CCT: a Conv2d, an activation, a MaxPool2d, then
    flattened): the last max-pool the line called whose output (B, C, h, w) holds the step's batch, width and positions;
    None where there is none. The convolution's own claim (a Linear of each patch) does not hold of a pooled map."""
    batch, positions, width = source.t(check.out).shape
    pooled = [call for call in calls if call.kind == ModuleKind.MAX_POOL2D and len(call.outputs) == 1
              and isinstance(grid := call.outputs[0], torch.Tensor) and grid.dim() == 4
              and grid.shape[:2] == (batch, width) and math.prod(grid.shape[2:]) == positions]
    if not pooled:
        return None
    name = f"the map the {pooled[-1].module} your line called made"
    return Bound(GridMovedLast(out=check.out, grid=Ref(name), made_by=f"the {pooled[-1].module}'s output"),
                 Given(source, {**source.tensors, name: present(pooled[-1].outputs[0])}), None,
                 f"the map taken from the {pooled[-1].module} the line called (a convolutional tokenizer's pooling)")
