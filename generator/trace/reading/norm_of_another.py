"""A pre-norm sublayer whose LayerNorm normalised a LayerNorm of another stream, not the stream its output is added to
(issue 40: ``mlp_out = self.mlp(self.ln2(x_norm))``, the MLP's LayerNorm given the attention's normalised input
``x_norm = self.ln1(x)`` in place of the sum ``x``). No step's own check sees it: the MLP's output is whatever its
Linears made of what they were given, and the residual sum adds up. The marked lines' module calls show it:

- the *streams* are the captured steps a marked line added a sublayer's output to (sublayer_input.py ``_streams``);
- a marked line called a LayerNorm whose output a Linear (or a module of the user's) on the same line read: the
  sublayer's input;
- that line's step is added to a stream (a captured step equals the stream plus it): the stream the LayerNorm belongs
  to, in every pre-norm form (``x + f(LN(x))``);
- the LayerNorm's input is not that stream, and is a LayerNorm of another, earlier stream (a gain and a bias fitted
  per feature reproduce it): a tensor normalised twice.

Then that line's step fails with the bug form "LayerNorm of the wrong tensor". A parallel block's MLP normalising the
block's input (``x + attn(ln1(x)) + mlp(ln2(x))``) reads a stream itself, never a LayerNorm of one, so it is not
taken for it; an input that fits nothing known is left alone."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import torch

from transformer_trace.checks import FAILED, CheckResult, UnfittableWeights, close
from transformer_trace.checks.evidence import BUG_FORM, Evidence
from transformer_trace.checks.normalisation import fitted_layer_norm
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.same_tensors import same_floats
from transformer_trace.trace.reading.sublayer_input import (
    _input, _is_norm, _named, _output, _streams, captured_by_stage,
)

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.trace.reading.pages import SnapshotReading

WRONG_TENSOR = "LayerNorm of the wrong tensor"
SUBLAYERS = (ModuleKind.LINEAR, ModuleKind.MULTIHEAD_ATTENTION, ModuleKind.USER)  # what a sublayer's input feeds
CLAIM = "the LayerNorm before a sublayer normalises the stream its output is added to (pre-norm)"


FedNorm = tuple[ModuleCall, torch.Tensor, ModuleCall]  # a LayerNorm call, its input, the call that read its output


def _fed_norms(page: SnapshotReading) -> Iterator[FedNorm]:
    """Each LayerNorm the page's line called whose output another call of the line read: (it, its input, the
    reader)."""
    for call in page.calls:
        read, out = _input(page, call), _output(page, call)
        if not _is_norm(call) or read is None or out is None:
            continue
        readers = (c for c in page.calls
                   if c.kind in SUBLAYERS and not _is_norm(c) and same_floats(_input(page, c), out))
        reader = next(readers, None)
        if reader is not None:
            yield call, read, reader


def _added_to(page: SnapshotReading, pages: Sequence[SnapshotReading],
              streams: Sequence[SnapshotReading]) -> tuple[SnapshotReading, SnapshotReading] | None:
    """The stream the page's step is added to, and the step holding the sum; None where no captured step does."""
    step = page.main_as_called
    alike = [stream for stream in streams if stream is not page and stream.main_as_called.shape == step.shape]
    return next(((stream, total) for stream in alike
                 for total in pages if total is not page and total is not stream
                 and same_floats(total.main_as_called, stream.main_as_called + step)), None)


def _normalised_from(read: torch.Tensor, streams: Sequence[SnapshotReading],
                     target: SnapshotReading) -> tuple[SnapshotReading, str] | None:
    """The earlier stream ``read`` is a LayerNorm of (gain and bias fitted), with the fit's detail; None where none."""
    for stream in streams:
        if stream is target or stream.order >= target.order or stream.main_as_called.shape != read.shape:
            continue
        try:
            _, fits, detail = fitted_layer_norm(read.double(), stream.main_as_called.double(), stream.label)
        except UnfittableWeights:
            continue
        if fits:
            return stream, detail
    return None


def norm_of_another(readings: Sequence[SnapshotReading],
                    results: dict[int, list[CheckResult]]) -> dict[int, list[CheckResult]]:
    """``results`` with the first captured step (in the catalogue's order) whose line's LayerNorm normalised a
    LayerNorm of another stream failing with the bug form WRONG_TENSOR (the module docstring); the others as they
    were."""
    for pages in captured_by_stage(readings):
        fed = {page.snap.number: norms for page in pages if (norms := list(_fed_norms(page)))}
        streams = _streams(pages) if fed else []  # (the streams compared only where a line's LayerNorm fed a call)
        for page, norm, read, reader, (target, total) in _normalising(pages, streams, fed):
            if read.shape != target.main_as_called.shape or same_floats(read, target.main_as_called):
                continue
            normalised = _normalised_from(read, streams, target)
            if normalised is None:
                continue
            other, fitted = normalised
            _, off = close(target.main_as_called.double(), read.double(), f"vs {_named(target)}")
            message = (f"{WRONG_TENSOR}: the {norm.module} {page.label}'s line called (its {reader.module} read the "
                       f"output) normalised a LayerNorm of {_named(other)}, not {_named(target)}, the stream its "
                       f"output is added to (your {_named(total)}); its input ({fitted}) {off}")
            found = CheckResult(name=CLAIM, passed=False, status=FAILED, detail=message,
                                evidence=Evidence(BUG_FORM, WRONG_TENSOR, message))
            return {**results, page.snap.number: [*results.get(page.snap.number, []), found]}
    return results


def _normalising(pages: Sequence[SnapshotReading], streams: Sequence[SnapshotReading], fed: dict[int, list[FedNorm]],
                 ) -> Iterator[tuple[SnapshotReading, ModuleCall, torch.Tensor, ModuleCall,
                                     tuple[SnapshotReading, SnapshotReading]]]:
    """Each LayerNorm a marked line called before a sublayer (``fed``: per snapshot, ``_fed_norms``) whose output (the
    line's step) is added to a stream, in the catalogue's order: (the page, the LayerNorm, its input, the call that
    read its output, (the stream, the sum))."""
    for page in sorted(pages, key=lambda p: p.snap.number) if streams else ():
        added = _added_to(page, pages, streams) if page.snap.number in fed else None
        if added is not None:
            for norm, read, reader in fed[page.snap.number]:
                yield page, norm, read, reader, added
