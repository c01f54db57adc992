"""The family of sinusoidal position tables correct code adds, fitted from the captured tensors: whatever the
frequencies (the paper's 1/10000^(2i/C), or a table of one's own such as 10000^(2·i/C) with i the feature itself, not
its pair), each feature column of the added term is a·sin(ω·pos) or a·cos(ω·pos), with one amplitude a for the whole
table. The term is ``out`` − s · ``before``, s the embedding's own factor fitted from the batch (1, or √C where the
lookup is scaled on the way); it must be the same for every item, since it depends on the position only.

The amplitude is what tells correct code from a bug: a = 1 is the table added once; a = 2 is the positions added
twice. Anything else is no table this family knows.

Where a line adds positions whose table no snapshot or module shows (a table made in a local, ``same_for_every_item``),
the added term is judged by the tensors alone: it depends on the position only, so it is the same for every item. A
learned table is then any such term; but a term that is exactly a sinusoid table of amplitude 2 is no learned table
(a learned one is never one sinusoid per feature, let alone of amplitude 2): it is a fixed table added twice."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from transformer_trace.checks.base import close
from transformer_trace.checks.evidence import Fit
from transformer_trace.sources import NotCheckable


@dataclass(frozen=True)
class OwnTable:
    """What the fit found: ``fits`` (the added term is one sinusoid per column, of one amplitude, the same for every
    item), the ``amplitude``, and ``words``, the numbers that say so or why not."""

    fits: bool
    amplitude: float
    words: str


def _embedding_factor(out: torch.Tensor, before: torch.Tensor) -> float | None:
    """The factor s of ``out`` = s · ``before`` + term(position), fitted from the differences between the batch's
    items (the term cancels); None with one item, or items whose embeddings do not differ."""
    if out.dim() < 3 or out.shape[0] < 2 or before.shape != out.shape:
        return None
    d_out, d_before = out[1:] - out[:1], before[1:] - before[:1]
    energy = float((d_before * d_before).sum())
    return float((d_out * d_before).sum()) / energy if energy > 1e-24 else None


def _column_fit(column: torch.Tensor, amplitude: float, pos: torch.Tensor) -> torch.Tensor:
    """The sinusoid of ``amplitude`` through a column's first two positions: a cosine where position 0 holds the
    amplitude, else a sine (both of its angles at position 1 tried, the closer kept)."""
    ratio = float(column[1]) / amplitude
    ratio = max(-1.0, min(1.0, ratio))
    if abs(float(column[0]) - amplitude) <= 1e-3 * abs(amplitude):
        return amplitude * torch.cos(math.acos(ratio) * pos)
    candidates = [amplitude * torch.sin(angle * pos) for angle in (math.asin(ratio), math.pi - math.asin(ratio))]
    return min(candidates, key=lambda fitted: float((fitted - column).abs().max()))


def own_table(out: torch.Tensor, before: torch.Tensor) -> OwnTable:
    """``out`` read as s · ``before`` plus a sinusoid table of its own frequencies (the module docstring)."""
    out, before = out.double(), before.double().expand_as(out)
    length = out.shape[-2]
    factor = _embedding_factor(out, before)
    if factor is None or length < 3:
        return OwnTable(False, 0.0, "a table of its own frequencies needs two items and three positions to fit")
    if abs(factor) < 0.05:  # an embedding (nearly) left out is no factor of correct code
        return OwnTable(False, 0.0, f"the embedding's factor fitted as {factor:.3g}: the embedding left out")
    term = out - factor * before
    same, detail = close(term, term[:1].expand_as(term), "the added term of each item vs the first item's")
    if not same:
        return OwnTable(False, 0.0, f"the added term is not the same for every item ({detail})")
    table = term[0]
    starts = table[0]
    nonzero = starts.abs() > 1e-6
    if not bool(nonzero.any()):
        return OwnTable(False, 0.0, "no column is a cosine (position 0 holds 0 everywhere)")
    amplitude = float(starts[nonzero].median())
    pos = torch.arange(length, dtype=torch.float64)
    fitted = torch.stack([_column_fit(table[:, j], amplitude, pos) for j in range(table.shape[-1])], dim=-1)
    factor_words = "" if abs(factor - 1) < 1e-4 else f", the embedding scaled by {factor:.4g} on the way" + (
        f" (√{out.shape[-1]})" if abs(factor - math.sqrt(out.shape[-1])) < 1e-3 * factor else "")
    fits, detail = close(table, fitted, f"the added term vs one sinusoid per feature of amplitude {amplitude:.4g}, "
                                        f"frequencies fitted{factor_words}")
    return OwnTable(fits, amplitude, detail)


def twice_a_table(own: OwnTable) -> bool:
    return own.fits and abs(own.amplitude - 2) <= 2e-3


def same_for_every_item(out: torch.Tensor, x: torch.Tensor, lack: NotCheckable) -> tuple[str, bool, str]:
    """Positions without their table (a trace without the model's weights): the term added to the input depends on the
    position only, so it is the same for every batch item; ``lack`` raised again where one item cannot tell. A term
    that is a sinusoid table is said to be one; twice a sinusoid table fails (``added_twice_without_table`` names it).
    """
    term = out - x
    if term.dim() < 3 or term.shape[0] < 2:
        raise lack
    passed, detail = close(term, term[:1].expand_as(term), f"the added term of each of the {term.shape[0]} items vs "
                           "the first item's")
    claim = ("equals its input plus a term that depends on the position only, the same for every item (learned "
             "positions; their table was not captured)")
    own = own_table(out, x) if passed else None
    if own is not None and twice_a_table(own):
        return claim, False, f"{detail}; but that term is a sinusoid table of amplitude {own.amplitude:.4g}, twice " \
                             f"the fixed table ({own.words})"
    if own is not None and own.fits and abs(own.amplitude - 1) <= 1e-3:
        return ("equals its input plus a term that depends on the position only, the same for every item: a sinusoid "
                "table (fixed positions)"), True, f"{detail}; {own.words}"
    return claim, passed, detail


def added_twice_without_table(out: torch.Tensor, x: torch.Tensor, step: str) -> Fit:
    """The bug form "positions added twice" where the table is not captured: the added term is a sinusoid table of
    amplitude 2."""
    own = own_table(out, x)
    if twice_a_table(own):
        return Fit(True, f"the positions were added twice: your {step} is its input plus a sinusoid table of amplitude "
                         f"{own.amplitude:.4g} where correct code adds one of amplitude 1 ({own.words})")
    return Fit(False, own.words)
