"""A step read as the last position's row alone (verify.py ``Layout.last_position``: a generation-style model computes
its final norm and its head on ``h[:, -1]``, (B, C) and (B, V) where the catalogue names (B, T, C) and (B, T, V)). Its
checks read every tensor of the run with the step's batch and positions axes at that position too, (B, 1, …), and the
module calls of its line likewise, so the final norm of the last block's output and the head of the final norm are
checked on the one row the script computed, whatever the other rows would have held."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import torch

from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.verify import Layout


def _at(tensor: torch.Tensor, batch_and_positions: tuple[int, int], position: int) -> torch.Tensor:
    if tensor.dim() >= 2 and tuple(tensor.shape[:2]) == batch_and_positions:
        return tensor[:, position:position + 1] if position >= 0 else tensor[:, position:][:, :1]
    return tensor


def _axes(layout: Layout | None) -> tuple[int, int] | None:
    if layout is None or not layout.last_position or layout.expected is None:
        return None
    return layout.expected[0], layout.expected[1]


def at_last_position(layout: Layout | None, tensors: Mapping[str, torch.Tensor],
                     position: int = -1) -> Mapping[str, torch.Tensor]:
    """``tensors`` as the checks of a step read so (``layout``) see them: each with the step's batch and positions
    axes first taken at ``position`` (the last), keeping that axis; all of them as they are for any other step."""
    axes = _axes(layout)
    if axes is None:
        return tensors
    return {name: _at(t, axes, position) if isinstance(t, torch.Tensor) else t for name, t in tensors.items()}


def calls_at_last_position(layout: Layout | None, calls: Sequence[ModuleCall],
                           position: int = -1) -> Sequence[ModuleCall]:
    """The line's module calls as ``at_last_position`` reads the run's tensors (their inputs and outputs)."""
    axes = _axes(layout)
    if axes is None:
        return calls
    return [dataclasses.replace(call, inputs=[None if t is None else _at(t, axes, position) for t in call.inputs],
                                outputs=[None if t is None else _at(t, axes, position) for t in call.outputs])
            for call in calls]
