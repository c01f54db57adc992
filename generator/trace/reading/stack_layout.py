"""An nn.TransformerEncoder (or one of its layers) given its input in the other layout than it reads (issue 40, round
twelve's DogWY B5: `self.transformer(x.transpose(0, 1))` where the encoder was built with ``batch_first=True``). In
eval mode without gradients its fast path calls no module of its own, so no attention step shows the attention running
across the batch items of each position; the call's record holds the layout the module reads (``batch_first``, the
child's "transformer_stack" kind) and the input it was given. Where a captured step of the run, in the catalogue's
batch-first layout (B, N, C) as it is, is that input with its first two axes swapped (``batch_first=True``) or is
that input as it is (``batch_first=False``, which reads (N, B, C)), the line fails with the bug form "batch and
sequence axes swapped". A batch whose size equals its length cannot tell, and is left as it was."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from transformer_trace.checks import FAILED, CheckResult, close
from transformer_trace.checks.evidence import BUG_FORM, Evidence
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.verify import LayoutStatus

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.trace.reading.pages import SnapshotReading

AXES_SWAPPED = "batch and sequence axes swapped"
CLAIM = "the encoder is given its input in the layout it reads"


def _batch_first_steps(readings: Sequence[SnapshotReading]) -> list[SnapshotReading]:
    """The captured (B, N, C) steps whose shape is the catalogue's as it is, B ≠ N."""
    return [page for page in readings if page.captured and page.layout is not None
            and page.layout.status is LayoutStatus.MATCH and page.main.shown.tensor.dim() == 3
            and page.main.shown.tensor.is_floating_point()
            and page.main.shown.tensor.shape[0] != page.main.shown.tensor.shape[1]]


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and close(a.double(), b.double(), "")[0]


def batch_axes_swapped(readings: Sequence[SnapshotReading],
                       results: dict[int, list[CheckResult]]) -> dict[int, list[CheckResult]]:
    """``results`` with the first captured step whose line gave an nn.TransformerEncoder (-Layer) its input in the
    other layout than it reads failing with the bug form AXES_SWAPPED (the module docstring)."""
    steps = _batch_first_steps(readings)
    for page in sorted((p for p in readings if p.captured), key=lambda p: p.snap.number):
        for call in sorted(page.calls, key=lambda c: c.depth):  # the encoder the line called before its layers
            given = call.inputs[0] if call.kind == ModuleKind.TRANSFORMER_STACK and call.inputs else None
            if not isinstance(given, torch.Tensor) or given.dim() != 3 or "batch_first" not in call.attrs:
                continue
            first = bool(call.attrs["batch_first"])
            wrong = given.transpose(0, 1) if first else given  # the input, if it were batch-first where it is not
            step = next((s for s in steps if _same(s.main.shown.tensor, wrong)), None)
            if step is None:
                continue
            B, N, C = step.main.shown.tensor.shape
            reads = "(batch, sequence, features)" if first else "(sequence, batch, features)"
            message = (f"your {call.module} reads its input as {reads} (batch_first={first}), but {page.label}'s "
                       f"line gave it {step.main.variable or step.main.name} ({step.label}), ({B}, {N}, {C}), "
                       f"{'with its first two axes swapped' if first else 'as it is'}: {tuple(given.shape)}; its "
                       "attention then runs across the batch items at each position, not across the positions")
            found = CheckResult(name=CLAIM, passed=False, status=FAILED, detail=message,
                                evidence=Evidence(BUG_FORM, AXES_SWAPPED, message))
            return {**results, page.snap.number: [*results.get(page.snap.number, []), found]}
    return results
