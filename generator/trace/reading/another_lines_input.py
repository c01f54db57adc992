"""Two marked lines whose module calls read one catalogue tensor that no snapshot shows, and read different tensors
(a cross-attention's K and V projections, both of the encoder's memory): which of the two is wrong is not told by
their disagreement alone (checking.py ``_stand_ins_agree`` needs three readers for a majority). It is told where one
of them read exactly the tensor a third marked line's Linear was called with, and the other did not: that one took
another line's input where the catalogue's tensor belongs (K projected from the queries' input, the decoder's own
stream, instead of the memory; with S = T no shape shows it). Correct code reads the one tensor in both, so this never
fires there."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import torch

from transformer_trace.checks import PASSED, CheckResult, close
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.same_tensors import same_tensor
from transformer_trace.trace.reading.stand_ins import StandIn, reader_failed, two_readers

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.trace.reading.pages import SnapshotReading


def _linear_inputs(page: SnapshotReading) -> list[tuple[str, torch.Tensor]]:
    """The inputs the page's line called its Linears with, each with the module's name."""
    return [(call.module, call.inputs[0]) for call in page.calls
            if call.kind == ModuleKind.LINEAR and call.inputs and isinstance(call.inputs[0], torch.Tensor)]


def another_lines_input(by_number: Mapping[int, SnapshotReading], results: dict[int, list[CheckResult]],
                        stand_ins: list[StandIn]) -> None:
    """Fail (in ``results``) the one of two disagreeing readers of a catalogue tensor that read another marked line's
    Linear input (the module docstring)."""
    for name, found in two_readers(stand_ins).items():
        (first, (_, a)), (second, (_, b)) = list(found.items())
        if a.shape != b.shape or same_tensor(a, b):
            continue  # they agree, or read another layout: nothing to tell
        others = [page for number, page in by_number.items() if page.captured and number not in found]
        for number, other_number, tensor, theirs in ((first, second, a, b), (second, first, b, a)):
            index = found[number][0]
            result = results[number][index]
            match = next(((page, module) for page in others for module, called in _linear_inputs(page)
                          if same_tensor(tensor, called)), None)
            if result.status != PASSED or match is None:
                continue
            page, module = match
            if any(same_tensor(theirs, called) for _, called in _linear_inputs(page)):
                continue  # both read what that line read: no telling
            reader = by_number[number]
            _, detail = close(tensor.double(), theirs.double(), f"this call's input vs the one "
                              f"{by_number[other_number].label} read")
            message = (f"your step was computed from the tensor {page.label}'s line called its {module} with, where "
                       f"{name} belongs (the tensor {by_number[other_number].label} read; no snapshot shows it): "
                       f"{detail}")
            results[reader.snap.number][index] = reader_failed(result, "computed from another tensor", message)
