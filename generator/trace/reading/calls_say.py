"""What the module calls of the marked lines say of the run's layout where the captured shapes cannot tell
(run_layout.py).

- Batch-first or sequence-first: `nn.MultiheadAttention`'s (or any module's) ``batch_first`` setting, with the steps'
  sizes or a step holding the module's very input (``batch_first_said``).
- One module per head, marked without the stream (issue 40): where only the per-head lines of Karpathy's ``Head`` are
  marked, a step of shape (a, L, hs) for the catalogue's (B, h, L, hs) reads both as one head of a batch of ``a`` and
  as ``a`` heads of one example without a batch axis. A projection keeps its input's batch axis and makes no heads
  axis, so a per-head step that is the very output of a Linear its line called on an (a, L, C) stream is one head of a
  batch of ``a`` (``one_head_of_a_batch``; verify.py ``bind_dims``, ``one_head_each``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

import torch

from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall


class Step(Protocol):
    """A captured step as the run's layout reads it (run_layout.py ``StepShape``)."""

    @property
    def named(self) -> tuple[str, ...]: ...

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def value(self) -> torch.Tensor | None: ...


def batch_first_said(calls: Iterable[ModuleCall], steps: Sequence[Step]) -> tuple[bool | None, str]:
    """What the modules the marked lines called say of the layout (their ``batch_first`` setting), where the steps
    show it: a module's input is (batch, positions, …) or (positions, batch, …) by its setting, and a step whose first
    two axes are those sizes, in either order, is in the one layout or the other (where batch and positions are the
    same size, only a step holding the module's very input says). None: no module says, or they disagree."""
    votes: dict[bool, set[str]] = {}
    for call in calls:
        given = call.inputs[0] if call.inputs else None
        if "batch_first" not in call.attrs or given is None or given.dim() != 3:
            continue
        first = bool(call.attrs["batch_first"])
        batch, positions = (given.shape[0], given.shape[1]) if first else (given.shape[1], given.shape[0])
        for step in steps:
            ahead = tuple(step.shape[:2])
            if batch != positions and ahead in ((positions, batch), (batch, positions)):
                votes.setdefault(ahead == (positions, batch), set()).add(call.module)
            elif step.value is not None and step.value.shape == given.shape and torch.equal(step.value, given):
                votes.setdefault(not first, set()).add(call.module)
    if len(votes) != 1:
        return None, ""
    sequence_first, modules = votes.popitem()
    return sequence_first, (f"the modules your marked lines called say so ({', '.join(sorted(modules))}: "
                            f"batch_first={not sequence_first}, with your steps' shapes)")


def one_head_of_a_batch(steps: Sequence[Step], calls: Sequence[ModuleCall]) -> bool:
    """Whether some per-head step captured without its heads axis is a Linear's output, that Linear called on a tensor
    with the same first two axes."""
    per_head = [s.value for s in steps if s.value is not None and len(s.named) == 4 and s.named[1] == "h"
                and s.value.dim() == 3]
    for call in calls if per_head else ():
        given = call.inputs[0] if call.inputs else None
        made = call.outputs[0] if call.outputs else None
        if (call.kind != ModuleKind.LINEAR or not isinstance(given, torch.Tensor) or not isinstance(made, torch.Tensor)
                or given.dim() != 3 or made.dim() != 3 or given.shape[:2] != made.shape[:2]):
            continue
        if any(value.shape == made.shape and torch.equal(value, made) for value in per_head):
            return True
    return False
