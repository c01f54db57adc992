"""Tokens averaged over the batch axis (issue 40, round ten's mean pooling with ``mean(dim=0)`` for ``mean(dim=1)``):
a pooled step the catalogue names (B, C) captured as (N, C), one row per position, no row per image. Its shape reads
as no layout, so its checks cannot run; the sequence the marked line read (a local, rows.py ``pooled_from``, or the
captured sequence the pooling check names) tells what it is: where the step equals that sequence's mean over its
batch axis (all its rows, or the rows after a class token the run captured), the bug form "averaged over the batch
axis" fails the step. Correct pooling has one row per image; a step of any other shape stays unrecognised."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import torch

from transformer_trace.checks import FAILED, CheckResult, close
from transformer_trace.checks.evidence import BUG_FORM, Evidence
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.reading.rows import pooled_from

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.trace.reading.pages import SnapshotReading

AVERAGED_OVER_BATCH = "averaged over the batch axis"


def _sequences(page: SnapshotReading, source: TensorDict | None) -> Iterator[tuple[torch.Tensor, str]]:
    """The (B, N, C) sequences the pooled step may come from: the one the line read, then the one its check names."""
    read = pooled_from(page.calls, None)
    if read is not None:
        yield read.sequence, f"`{read.name}`"
    for check in getattr(page.snap, "checks", ()):
        ref = getattr(check, "source", None)
        if isinstance(ref, Ref) and source is not None and source.has(ref):
            yield source.t(ref), source.name(ref)


def averaged_over_batch(page: SnapshotReading, source: TensorDict | None) -> CheckResult | None:
    """The bug form's failure where the page's step (named (B, C), its shape not read) is the mean over the batch
    axis of a sequence the line read, with or without its first row (the class token); else None."""
    step = page.main.shown.tensor
    named = tuple(page.shape)
    if named != ("B", "C") or not isinstance(step, torch.Tensor) or step.dim() != 2 or page.run.sequence_first:
        return None
    for sequence, name in _sequences(page, source):
        if sequence.dim() != 3 or sequence.shape[0] < 2 or not sequence.is_floating_point():
            continue
        for rows, words in ((slice(None), "all its rows"), (slice(1, None), "its rows after row 0")):
            mean = sequence[:, rows].mean(0)
            if mean.shape != step.shape:
                continue
            fits, detail = close(step.double(), mean.double(), "vs the mean over axis 0 (the batch)")
            if fits:
                message = (f"the tokens were averaged over the batch axis: your {page.main.variable or page.label} "
                           f"({page.label}), shape {tuple(step.shape)}, is the mean of {name} ({words}) over axis 0, "
                           f"the {sequence.shape[0]} images, where the mean over the positions (axis 1) belongs: "
                           f"one row per position mixing the images, none per image ({detail})")
                return CheckResult(name="is one vector per image, pooled over its positions", passed=False,
                                   status=FAILED, detail=message, evidence=Evidence(BUG_FORM, AVERAGED_OVER_BATCH,
                                                                                    message))
    return None
