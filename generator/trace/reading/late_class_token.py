"""A class token that joins after the blocks (issue 40, round eleven: CaiT's class-attention stage): every block runs
on the N patches alone, the class token (captured as its (B, 1, C) step) is updated by blocks of its own that no
marker shows, and joins the patches only for the final sequence, ``torch.cat((cls_tokens, x), dim=1)``. The steps
after the join then hold N1 + 1 rows where every block step holds N1 = N, which no single token count reads.

Read from the values, once per run: a step named with the tokens axis holding one row more than the blocks, whose
sequence (the input of the module its line called on it, a final LayerNorm, else the step itself) is a block step's
captured value at one of its hits with one row joined, first or last. That step is then read with N1 + 1 tokens, the
joined row first (moved there where it joined last), so the head's pick of row 0 is checked against the class token's
row, not against whatever the script put first."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.extra_tokens import rows_joined

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.trace.reading.run_layout import StepShape


@dataclass(frozen=True)
class LateClassToken:
    """The steps read with ``tokens`` rows (the blocks' N1 + 1), the class token's row first or last in them."""

    steps: tuple[str, ...]
    tokens: int
    first: bool
    rests_on: str

    def says(self) -> str:
        return (f"joins after the blocks, {'first' if self.first else 'last'}: the blocks hold the "
                f"{self.tokens - 1} patches alone, {', '.join(self.steps)} {self.tokens} tokens"
                + ("" if self.first else ", read with the class token's row first"))

    def canonical(self, step: str, named: Sequence[str], tensor: torch.Tensor) -> torch.Tensor | None:
        """The step's tensor with the class token's row first on its tokens axis, where it is a step read so."""
        if step not in self.steps or "N1" not in named:
            return None
        axis = list(named).index("N1")
        if axis >= tensor.dim() or tensor.shape[axis] != self.tokens:
            return None
        return tensor if self.first else tensor.roll(1, dims=axis)


def _joined_sequence(step: StepShape, calls: Sequence[ModuleCall]) -> torch.Tensor | None:
    """What the step's rows were computed from row by row: the input of a module call that gave the step's value
    (a final LayerNorm), else the step's value itself."""
    value = step.value
    if value is None:
        return None
    for call in calls:
        given = call.inputs[0] if call.inputs else None
        output = call.outputs[0] if call.outputs else None
        if isinstance(given, torch.Tensor) and isinstance(output, torch.Tensor) and given.shape == value.shape \
                and output.shape == value.shape and torch.equal(output, value):
            return given
    return value


def find_late_class_token(shapes: Sequence[StepShape], dims: dict[str, int],
                          calls: Iterable[ModuleCall]) -> LateClassToken | None:
    """The class token joining after the blocks (the module docstring), where the run's steps show it; else None."""
    tokens, patches = dims.get("N1"), dims.get("N")
    has_class_token = any(s.named == ("B", "1", "C") and s.value is not None for s in shapes)
    if tokens is None or tokens != patches or not has_class_token:
        return None
    blocks = [s for s in shapes if s.named == ("B", "N1", "C") and s.shape[1:2] == (tokens,)]
    later = [s for s in shapes if s.named == ("B", "N1", "C") and s.shape[1:2] == (tokens + 1,)]
    called, found = list(calls), list[tuple[str, str, int, int | None]]()
    for step in later:
        sequence = _joined_sequence(step, called)
        if sequence is None or sequence.dim() != 3:
            continue
        joined = ((block.step, hit, rows_joined(sequence, value)) for block in reversed(blocks)
                  for hit, value in enumerate(block.hits) if value.shape[0] == sequence.shape[0])
        match = next(((label, hit, row) for label, hit, row in joined if row in (0, tokens)), None)
        if match is not None:
            found.append((step.step, *match))
    if not found or len({row for *_, row in found}) != 1:
        return None
    label, block, hit, row = found[0]
    where = "first" if row == 0 else "last"
    because = (f"{label}'s sequence is {block} (hit {hit + 1}) with one row joined {where}; every block step holds the "
               f"{tokens} patches alone")
    return LateClassToken(tuple(step for step, *_ in found), tokens + 1, row == 0, because)


def class_token_read(calls: Iterable[ModuleCall], channels: int | None) -> tuple[str, torch.Tensor] | None:
    """The class token where no step shows it: the one parameter of one row of ``channels`` a marked line read by
    attribute (``torch.cat([self.cls_token.expand(B, -1, -1), x], dim=1)``), as (1, 1, C), with its name; None where
    none or several were read."""
    read = {call.module: value for call in calls if call.kind == ModuleKind.READ
            for value in call.params.values() if isinstance(value, torch.Tensor) and value.dim() in (2, 3)
            and value.shape[-2:] == (1, channels) and value.numel() == channels}
    if len(read) != 1:
        return None
    name, value = read.popitem()
    return f"`{name}`, the parameter your line read", value.reshape(1, 1, -1)
