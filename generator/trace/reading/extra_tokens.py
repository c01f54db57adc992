"""Extra tokens (issue 40, point 3): tokens of the model's own that join a ViT's sequence after its embedding steps,
as DINOv2's register tokens join after the positions are added (``torch.cat((x[:, :1], registers, x[:, 1:]))``). The
run then holds two token counts: the class token and the patches (N + 1) before the join, and those plus the k extra
tokens in every block. Read from the values, once per run: the first step of the larger count is the last step of the
smaller one with k rows inserted as one run of rows. The steps before the join are then read with their own count
(N1 = N + 1) instead of misfitting the run's, and the step that receives the extra tokens is checked with them taken
out (``rows_joined``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ExtraTokens:
    """k tokens joined at rows ``start``…``start + k − 1`` between step ``before`` and step ``after``."""

    count: int
    start: int
    before: str
    after: str

    def says(self) -> str:
        return (f"{self.count} tokens of the model's own (registers) join at rows {self.start}…"
                f"{self.start + self.count - 1} after {self.before}")

    def rests_on(self) -> str:
        return (f"{self.after} is {self.before} with {self.count} rows inserted at row {self.start}; the steps before "
                "the join are read with their own token count")


def rows_joined(longer: torch.Tensor, shorter: torch.Tensor) -> int | None:
    """The row (axis 1) where ``longer`` holds ``shorter`` with one run of extra rows inserted, else None: every other
    axis the same size, and the rows outside the run equal (within float32 rounding)."""
    if longer.dim() < 2 or longer.dim() != shorter.dim() or longer.shape[0] != shorter.shape[0]:
        return None
    extra = longer.shape[1] - shorter.shape[1]
    if extra <= 0 or longer.shape[2:] != shorter.shape[2:]:
        return None
    scale = max(1.0, float(shorter.abs().max())) if shorter.numel() else 1.0
    for start in range(shorter.shape[1] + 1):
        kept = torch.cat([longer[:, :start], longer[:, start + extra:]], dim=1)
        if bool(((kept.double() - shorter.double()).abs() <= 1e-4 * scale).all()):
            return start
    return None


def find_extra_tokens(steps: Sequence[tuple[str, torch.Tensor]], tokens: int) -> ExtraTokens | None:
    """From the steps of (B, N1, C) read in catalogue order (label, value): the join, where a step of the run's token
    count follows a step of fewer tokens that it holds with one run of rows inserted; not one row first or last (the
    class token itself, joining after the positions)."""
    shorter: tuple[str, torch.Tensor] | None = None
    for label, value in steps:
        if value.dim() != 3:
            continue
        if value.shape[1] < tokens:
            shorter = (label, value)
        elif value.shape[1] == tokens and shorter is not None:
            start, count = rows_joined(value, shorter[1]), tokens - shorter[1].shape[1]
            if start is not None and not (count == 1 and start in (0, shorter[1].shape[1])):
                return ExtraTokens(count, start, shorter[0], label)
            # (one row joined first or last is the class token joining after the positions: run_layout reads it)
    return None
