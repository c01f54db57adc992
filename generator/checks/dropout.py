"""Dropout read back from the captured tensors (issue 40, point 5): a step that ran through an active dropout is judged
where the randomness can be taken out. Dropout zeroes entries at random and scales the others by 1/(1−p): where the
step's tensor is exactly zero at some entries and the expected tensor times one constant c ≥ 1 at all the others, that
is the expected tensor through a dropout with p = 1 − 1/c, which is read from the tensors, never assumed. A step whose
randomness cannot be read back so (a dropout on the attention weights inside F.scaled_dot_product_attention, before
the product with V) is said to have run with dropout active, not compared exactly (trace/reading/dropout.py)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from transformer_trace.checks.base import close

# The claims a step judged through an active dropout passes with: what trace/reading/dropout.py reads a run's mode from
DROPOUT_CLAIM = "the operands add up to the residual sum, through an active dropout"
SOFTMAX_DROPOUT_CLAIM = "rows are the softmax over the keys, through an active dropout on the attention weights"
DROPOUT_CLAIMS = frozenset({DROPOUT_CLAIM, SOFTMAX_DROPOUT_CLAIM})


@dataclass(frozen=True)
class DropoutFit:
    """``got`` read as ``expected`` through a dropout: the fitted probability and how many entries it zeroed (of the
    attention weights behind a context, checks/attention_dropout.py, which says it in its own words)."""

    p: float
    zeroed: int
    total: int
    detail: str

    def __str__(self) -> str:
        return (f"dropout active: {self.zeroed:,} of {self.total:,} entries zeroed, the others the expected values "
                f"times 1/(1−p) with p = {self.p:.3f} fitted; {self.detail}")


def through_dropout(got: torch.Tensor, expected: torch.Tensor, what: str) -> DropoutFit | None:
    """``got`` as ``expected`` through an active dropout (some entries zeroed, the rest scaled by one c > 1), or None
    where it is not (nothing zeroed, another scale per entry, zeros where ``expected`` is zero too)."""
    if got.shape != expected.shape or got.numel() == 0 or not got.is_floating_point():
        return None
    tiny = 1e-12 * (1.0 + float(expected.abs().max()))
    zeroed = (got == 0) & (expected.abs() > tiny)
    kept = ~zeroed & (expected.abs() > 1e-6 * (1.0 + float(expected.abs().max())))
    if not bool(zeroed.any()) or not bool(kept.any()):
        return None
    scale = float((got[kept] / expected[kept]).median())
    if not 1.0 < scale < 1e3:
        return None
    passed, detail = close(got, torch.where(zeroed, torch.zeros_like(expected), expected * scale),
                           f"{what}, zeroed where dropped and times {scale:.4f} elsewhere")
    if not passed:
        return None
    return DropoutFit(p=1.0 - 1.0 / scale, zeroed=int(zeroed.sum()), total=got.numel(), detail=detail)


def sum_through_dropout(out: torch.Tensor, operands: list[torch.Tensor]) -> DropoutFit | None:
    """A residual sum through an active dropout: on the whole sum (``drop(tok_emb + pos_emb)``), or on its last
    operand, the sublayer's output (``x + drop(proj(y))``, the sublayer's output marked before its dropout)."""
    whole = through_dropout(out, sum(operands[1:], operands[0]), "the operands added up")
    if whole is not None or len(operands) < 2:
        return whole
    rest = out - sum(operands[1:-1], operands[0])
    return through_dropout(rest, operands[-1], "the sum less the other operands vs the last operand")
