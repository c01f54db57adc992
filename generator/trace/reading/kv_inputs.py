"""Two marked lines whose Linears project one catalogue tensor no snapshot shows (an attention's K and V projections,
both of the encoder's memory, or of the block's normalised input) were given different tensors: every correct form of
an attention reads its keys and values from one input (a fused KV projection trivially so; separate Linears on one
tensor; grouped K/V heads; a K/V cache grows both alike), so the disagreement is itself the evidence, whichever of the
two is wrong. Of two readers, the later one (in the order the script ran) is failed, naming what each read, how far
apart, and which captured step each equals or is the LayerNorm of (the encoder's output before its LayerNorm, say).
Where a third marked line's Linear read one of them (another_lines_input.py) or three readers give a majority
(checking.py ``_stand_ins_agree``), those rules have judged first; a step already failed is left as it is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import torch

from transformer_trace.checks import PASSED, CheckResult, close
from transformer_trace.checks.base import UnfittableWeights
from transformer_trace.checks.normalisation import fitted_layer_norm
from transformer_trace.sources import NotCheckable
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.same_tensors import same_tensor
from transformer_trace.trace.reading.stand_ins import StandIn, reader_failed, two_readers

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.trace.reading.pages import SnapshotReading

DIFFERENT_INPUTS = "K and V read from different inputs"


def _projected(page: SnapshotReading, tensor: torch.Tensor) -> str | None:
    """The Linear the page's line called with ``tensor``, by its name; None where no Linear of the line read it."""
    return next((call.module for call in page.calls if call.kind == ModuleKind.LINEAR and call.inputs
                 and isinstance(call.inputs[0], torch.Tensor) and same_tensor(call.inputs[0], tensor)), None)


def _which(tensor: torch.Tensor, captured: list[SnapshotReading]) -> str:
    """What ``tensor`` is among the captured steps: one of them, or a LayerNorm of one (gain and bias fitted); or ""."""
    alike = [page for page in captured if tuple(page.main_as_called.shape) == tuple(tensor.shape)]
    for page in alike:
        if same_tensor(tensor, page.main_as_called):
            return f" (the tensor of {page.label})"
    for page in alike:
        try:
            _, normalised, _ = fitted_layer_norm(tensor.double(), page.main_as_called.double(), page.label)
        except (NotCheckable, UnfittableWeights, RuntimeError):
            continue
        if normalised:
            return f" (a LayerNorm of {page.label}, gain and bias fitted)"
    return ""


def k_and_v_inputs_differ(by_number: Mapping[int, SnapshotReading], results: dict[int, list[CheckResult]],
                          stand_ins: list[StandIn]) -> None:
    """Fail (in ``results``) the later of two projections of one catalogue tensor that were given different tensors
    (the module docstring)."""
    for name, found in two_readers(stand_ins).items():
        (first, (first_index, a)), (second, (second_index, b)) = sorted(
            found.items(), key=lambda item: by_number[item[0]].order)
        pages = by_number[first], by_number[second]
        if a.shape != b.shape or same_tensor(a, b) or any(results[n][i].status != PASSED for n, i in
                                                    ((first, first_index), (second, second_index))):
            continue  # they agree, read another layout, or a rule before this one judged
        modules = _projected(pages[0], a), _projected(pages[1], b)
        if None in modules:
            continue  # not two projections of it
        captured = [page for number, page in by_number.items() if page.captured and number not in found]
        said = [f"{page.label}'s {module}" for page, module in zip(pages, modules)]
        _, detail = close(b.double(), a.double(), f"what {said[1]} was given vs what {said[0]} was")
        message = (f"{DIFFERENT_INPUTS}: {said[0]} and {said[1]} project one tensor, {name}, in every correct "
                   f"attention, but were given different ones ({said[0]}: its line's input{_which(a, captured)}; "
                   f"{said[1]}: its line's input{_which(b, captured)}): {detail}")
        result = results[second][second_index]
        results[second][second_index] = reader_failed(result, DIFFERENT_INPUTS, message)
