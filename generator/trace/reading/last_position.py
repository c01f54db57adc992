"""A step read as the last position's row alone (verify.py ``Layout.last_position``: a generation-style model computes
its final norm and its head on ``h[:, -1]``, (B, C) and (B, V) where the catalogue names (B, T, C) and (B, T, V)). Its
checks read every tensor of the run with the step's batch and positions axes at that position too, (B, 1, …), and the
module calls of its line likewise, so the final norm of the last block's output and the head of the final norm are
checked on the one row the script computed, whatever the other rows would have held.

That row is tied to the last position of the sequence the line read (``wrong_row_read``): where the module the line
called was given another position's row of the captured step its checks read (``self.lm_head(x[:, [0], :])``, where
``x[:, [-1], :]`` belongs: modded-nanogpt's B6), the step is "the wrong position", however its checks judged the row
(they read the module's own input: any row passes them)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from typing import Any

import torch

from transformer_trace.checks import CheckResult, close
from transformer_trace.checks.evidence import BUG_FORM, Evidence
from transformer_trace.sources import TensorSource
from transformer_trace.trace.child.protocol import ModuleKind
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


def _rows_given(calls: Sequence[ModuleCall], batch: int) -> list[tuple[str, torch.Tensor]]:
    """The one-position inputs (B, 1, …) the line's module calls were given, with each module's class."""
    return [(call.module, given) for call in calls if call.kind not in (ModuleKind.LOCAL, ModuleKind.READ)
            and call.inputs and isinstance(given := call.inputs[0], torch.Tensor) and given.is_floating_point()
            and given.dim() >= 3 and given.shape[0] == batch and given.shape[1] == 1]


def wrong_row_read(page: Any, found: list[CheckResult], full: TensorSource) -> list[CheckResult]:
    """``found`` (a last position's step, its checks passed) as it is, unless a module the line called was given
    position p's row of a captured sequence (B, T, …) the step's checks read, where p is not the last and its row
    differs from the last one's: then "the wrong position" (``full``: the run's tensors, every position kept)."""
    batch, length = page.layout.expected[0], page.layout.expected[1]
    sequences = [(full.name(ref), full.t(ref)) for check in getattr(page.snap, "checks", ()) for ref in check.inputs()
                 if full.has(ref)]
    for module, row in _rows_given(page.calls, batch):
        for name, sequence in sequences:
            if tuple(sequence.shape[:2]) != (batch, length) or sequence.shape[2:] != row.shape[2:]:
                continue
            row, sequence = row.double(), sequence.double()
            if close(row, sequence[:, -1:], "")[0]:
                return found  # the last position's row: as its checks judged it
            for position in range(length - 1):
                if close(row, sequence[:, position:position + 1], "")[0] and not close(
                        sequence[:, position:position + 1], sequence[:, -1:], "")[0]:
                    said = (f"your {page.main.variable or page.label} is computed from position {position}'s row of "
                            f"{name}, not the last position's ({length - 1}), which the next token is scored from: "
                            f"the {module} your line called was given {name}[:, {position}]"
                            + "; ".join(["", *(f"{r.name}: {r.detail}" for r in found)]))
                    return [CheckResult(name=found[0].name if found else "", passed=False, detail=said,
                                        evidence=Evidence(BUG_FORM, "the wrong position", said))]
    return found
