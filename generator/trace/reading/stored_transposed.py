"""Per-head keys stored already transposed for the product, read jointly from the run (issue 40, point 3).

GPT-2's ``split_heads(key, k=True)`` keeps K as (B, h, hs, T), its last two axes swapped so that ``q @ k`` is the
product Q·Kᵀ. Where T ≠ hs the shape says so and the step is read with its axes permuted (verify.py ``layout``); where
T = hs the shape alone cannot tell (B, h, hs, T) from the catalogue's (B, h, T, hs), and reading it as captured makes
both the K step and the scores step wrong on correct code. The run tells where its numbers do: a captured scores step
(B, h, T, T') that is a constant times Y·X for another captured per-head step Y (the queries), and no constant times
Y·Xᵀ, shows that X is stored transposed, whatever the constant (1/√hs, or 1 where the scaling was left out, or K taken
from the wrong slice: the step is then still a product with X as stored). ``stored_transposed`` finds those steps once
per run; run_layout.py reads them transposed at every hit, and the overview says what the decision rests on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

# a product fits a step up to one fitted constant where its largest residual is this small against the step's values
# (float32 products of tiny sizes agree to ~1e-6); the other orientation, a different product, misses by O(1)
FITS, MISSES = 1e-4, 1e-1


@dataclass(frozen=True)
class Transposed:
    """A per-head step read transposed: its label and named shape, and the evidence (one line for the overview)."""

    step: str
    named: tuple[str, ...]
    because: str


def _residual(scores: torch.Tensor, product: torch.Tensor) -> float:
    """How far ``scores`` is from the best constant times ``product``, against the scores' own size (finite entries
    only: a mask's −inf is no evidence either way); 1.0 where nothing can be fitted."""
    finite = torch.isfinite(scores) & (scores.abs() < 1e8)  # a −1e10 masking value is no product either
    x, y = product[finite].double(), scores[finite].double()
    if x.numel() == 0 or float((x * x).sum()) == 0.0 or float(y.abs().max()) == 0.0:
        return 1.0
    c = float((x * y).sum() / (x * x).sum())
    return float((y - c * x).abs().max() / y.abs().max())


def stored_transposed(steps: Iterable[tuple[str, tuple[str, ...], torch.Tensor]], positions: frozenset[str],
                      ) -> tuple[Transposed, ...]:
    """The per-head steps (B, h, <positions>, <features>) whose two last axes are the same size and whose values say
    they are stored transposed: ``steps`` are (label, named shape, value as the run reads it); ``positions``, the
    named axes that count positions. See the module's docstring for the rule."""
    four = [(label, named, value) for label, named, value in steps if value.dim() == 4 and len(named) == 4
            and named[:2] == ("B", "h") and value.is_floating_point()]
    scores = [(label, value) for label, named, value in four if named[2] in positions and named[3] in positions]
    found = []
    for label, named, value in four:
        if not (named[2] in positions and named[3] not in positions and value.shape[2] == value.shape[3]):
            continue
        others = [(other, y) for other, n, y in four if other != label and n[3] == named[3] and y.shape == value.shape]
        evidence = _product_evidence(label, value, others, scores)
        if evidence:
            found.append(Transposed(label, named, evidence))
    return tuple(found)


def _product_evidence(label: str, value: torch.Tensor, others: Sequence[tuple[str, torch.Tensor]],
                      scores: Sequence[tuple[str, torch.Tensor]]) -> str:
    """Why ``value`` is stored transposed ("G11 is G08 · G09 as stored …"), or "" where no scores step says so or
    one fits it in the catalogue's orientation."""
    as_stored = ""
    for other, y in others:
        stored, named = y.double() @ value.double(), y.double() @ value.double().transpose(-2, -1)
        for step, s in scores:
            if s.shape != stored.shape:
                continue
            if _residual(s, named) <= FITS:
                return ""  # read as named, the step is a product: nothing to turn
            if not as_stored and _residual(s, stored) <= FITS < MISSES <= _residual(s, named):
                as_stored = (f"{step} is a constant times {other} · {label} as captured, not {other} · {label}ᵀ: "
                             f"{label} holds the keys already transposed for the product")
    return as_stored

