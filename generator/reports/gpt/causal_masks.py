"""The GPT report's causal-mask checks: the mask (G12) allows each query itself and the keys before it, and the
masked scores (G13) are the scores blocked where it says; with more keys than queries (a memory of earlier positions
before them: Transformer-XL's segment memory) the queries are the last of the keys (checks/masks.py
``future_entries``), and a mask aligned to the keys' start instead is a bug form of its own."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from transformer_trace.checks import THIS, Check, TraceUse, close
from transformer_trace.checks.evidence import BugForm, Fit, Property
from transformer_trace.checks.masks import (aligned_to_keys_start, causal_by_own_pattern, causal_reading,
                                           future_left_visible, mask_allows, masked_as_written, masked_entries,
                                           padding_said, pattern_of_own, sliding_window)
from transformer_trace.checks.retention import DECAY_REVERSED, decays, is_decay
from transformer_trace.checks.sinks import SINKS_MASKED_BEHIND, allowed_with_sinks, sinks_said
from transformer_trace.sources import NotCheckable, Ref, TensorSource

PREFIX_TOLERANCE = 1e-6  # earlier positions must not move when the last byte changes


def optional_input(s: TensorSource, key: str):
    """The run input ``key`` (a second pass's measurement), None where the run has none."""
    try:
        return s.input(key)
    except NotCheckable:
        return None


def _lower_triangle(T: int, S: int | None = None) -> torch.Tensor:
    S = T if S is None else S
    return torch.arange(S)[None, :] <= torch.arange(S - T, S)[:, None]  # (T, S): key s allowed for query t


def _mask_sees_later(check: CausalMaskBool, s: TensorSource) -> str | None:
    allowed, kind = mask_allows(s.cpu(check.mask))
    T = allowed.shape[-1]
    seen = int((allowed & ~_lower_triangle(allowed.shape[-2], T)).sum())
    return f"a position sees the next: your {kind} mask leaves {seen} future entries visible" if seen else None


def _mask_at_keys_start(check: CausalMaskBool, s: TensorSource) -> Fit | None:
    """A marked mask over more keys than queries that allows query i the keys 0 … i (masks.py)."""
    return aligned_to_keys_start(mask_allows(s.cpu(check.mask))[0], s.name(check.mask))


MASK_AT_KEYS_START = "causal mask aligned to the keys' start"


@dataclass(frozen=True, kw_only=True)
class CausalMaskBool(Check):
    """The ``mask`` (boolean either way round, or additive: ``mask_allows``) allows exactly on and below the
    diagonal, ``masked`` is ``scores`` with −inf where it blocks,
    and (from the run's second pass, when it has one) later bytes do not reach earlier positions."""
    CLAIM = "lets each query see itself and the keys before it, and blocks the scores elsewhere"
    TRACE = TraceUse(mask_step=True)

    DERIVES = "masked"
    OPTIONAL = (("masked", "scores"),)  # without them (`nn.TransformerEncoder` masks inside): the mask alone
    PROPERTIES = (Property("no query attends to a later key", "the mask's entries above the diagonal",
                           _mask_sees_later),)
    BUG_FORMS = (BugForm(MASK_AT_KEYS_START, "the mask's allowed entries vs keys 0 … i for query i, more keys than "
                         "queries", _mask_at_keys_start), DECAY_REVERSED)

    masked: Ref | None = None
    scores: Ref | None = None
    mask: Ref

    def derive(self, s: TensorSource) -> torch.Tensor | None:
        """The masked scores of a causal model: −inf exactly above the diagonal (the mask itself not needed)."""
        if self.scores is None:
            return None
        scores = s.t(self.scores)
        return scores.masked_fill(~_lower_triangle(scores.shape[-2], scores.shape[-1]), float("-inf"))

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        allowed, kind = mask_allows(s.cpu(self.mask))  # (1, 1, T, T): boolean either way round, or additive
        T, S = allowed.shape[-2:]
        expected = _lower_triangle(T, S).view(1, 1, T, S)  # the queries the last T of S keys (after a memory)
        seen, hidden, keys, queries = causal_reading(allowed)  # per item or head: the triangle, padding besides
        window = sliding_window(allowed) if seen == 0 and hidden else None  # Mistral's local band, its width fitted
        structure = seen == 0 and (hidden == 0 or window is not None)
        banded = f"; the {hidden} entries further back than {window} positions blocked: a sliding-window causal mask"
        padding = padding_said(keys, queries) + (banded if window is not None else "")
        if is_decay(s.cpu(self.mask)):  # retention's D: a causal pattern that also decays going back
            decaying, said = decays(s.cpu(self.mask))
            structure &= decaying
            padding += f"; {said}"
        if self.masked is None or self.scores is None:  # the scores it masks never shown: the mask's pattern alone
            return ("True exactly on and below the diagonal", structure,
                    f"{int(expected.sum())} allowed (on or below the diagonal) and {int((~expected).sum())} blocked "
                    f"entries, as expected: {structure} (the {kind} mask alone: no captured step shows the scores it "
                    "masks)" + padding + ("" if structure else f"; {seen} future entries visible"))
        # attention sinks: the scores' keys n learned rows and the T positions the mask covers (checks/sinks.py)
        widened_allowed, widened, sinks = allowed_with_sinks(s.cpu(self.mask), s.t(self.masked).shape[-1])
        recomputed, how = masked_as_written(s.t(self.masked), s.t(self.scores), widened_allowed, widened)
        applied, detail = close(s.t(self.masked), recomputed, f"masked scores vs scores with {how}")
        if sinks:
            detail = (f"the mask read with {sinks} always-allowed columns in front ({sinks_said(sinks, S + sinks)}; "
                      f"the causal rule judged on the {S} token columns alone); {detail}")
        change = optional_input(s, "prefix_change")
        invariant = change is None or change <= PREFIX_TOLERANCE
        text = (f"{int(expected.sum())} allowed (on or below the diagonal) and {int((~expected).sum())} blocked "
                f"entries, as expected: {structure}{padding}; "
                + detail)
        if change is None:
            text += ("; with a one-byte prompt there is no earlier position to compare" if T == 1 else
                     "; no second pass with the last byte changed ran (a trace runs the script once), so the "
                     "invariance of the earlier positions was not measured")
        else:
            text += (f"; a second pass with the last byte changed (0x{s.input('changed_ids')[0]:02X} → "
                     f"0x{s.input('changed_ids')[1]:02X}) moved "
                     f"every tensor at the {T - 1} earlier positions by at most {s.input('prefix_change'):.1e} "
                     f"(tolerance {PREFIX_TOLERANCE:.0e})")
        return (
            "True exactly on and below the diagonal; later bytes cannot reach earlier positions",
            structure and applied and invariant,
            text,
        )


def _masked_sees_later(check: MaskedFillOf, s: TensorSource) -> str | None:
    if check.mask is not None:  # a marked mask is judged at its own step (G12)
        return None
    seen = future_left_visible(s.t(check.out), s.t(check.scores))
    return (f"a position sees the next: your {s.name(check.out)} leaves {seen} scores above the diagonal unmasked (no "
            "mask marked: read from the step's own masked entries)") if seen else None


def scaled_at_the_mask(check: MaskedFillOf, s: TensorSource) -> tuple[torch.Tensor, str] | None:
    """The scores / √hs, where the 1/√hs is applied on the masking line (Transformer-XL's
    ``att_score.tril(mem_len) / √hs``): only where the scores step is not already Q·Kᵀ/√hs (a second scale is a bug,
    not this form), the queries and keys captured per head; None otherwise."""
    if check.q is None or check.k is None or not (s.has(check.q) and s.has(check.k)):
        return None
    q, k, scores = s.t(check.q), s.t(check.k), s.t(check.scores)
    if q.dim() != 4 or k.dim() != 4 or q.shape[:2] != k.shape[:2] or q.shape[-1] != k.shape[-1]:
        return None
    hs = q.shape[-1]
    product = q @ k.transpose(-2, -1) / math.sqrt(hs)
    if product.shape == scores.shape and close(scores, product, "")[0]:
        return None  # the scores already scaled
    return scores / math.sqrt(hs), (f"the scores / √{hs}: the 1/√{hs} applied on the masking line (the scores "
                                    f"step before it is not Q·Kᵀ/√{hs})")


def _masked_at_keys_start(check: MaskedFillOf, s: TensorSource) -> Fit | None:
    """Masked scores over more keys than queries, masked where the step's own mask (or the marked one) allows query i
    the keys 0 … i, the scores kept there (masks.py ``aligned_to_keys_start``), scaled on that line or before it."""
    got, fit = s.t(check.out), None
    scaled = scaled_at_the_mask(check, s)
    for scores in (s.t(check.scores), *(() if scaled is None else (scaled[0],))):
        allowed = pattern_of_own(got, scores)[0] if check.mask is None else mask_allows(s.cpu(check.mask))[0]
        fit = aligned_to_keys_start(allowed, s.name(check.out))
        if fit is None or not fit.fits:
            continue
        recomputed, how = masked_as_written(got, scores, allowed)
        kept, detail = close(got, recomputed, f"recomputed: the scores with {how}")
        fit = Fit(kept, f"{fit.message} ({detail})" if kept else detail)
        if kept:
            return fit
    return fit


@dataclass(frozen=True, kw_only=True)
class MaskedFillOf(Check):
    """Tensors only: ``out`` is ``scores`` with −inf exactly where the ``mask`` blocks (``mask_allows``); with no mask
    marked (a buffer sliced inside the ``masked_fill`` line), where the step's own masked entries say, which a causal
    model's must put exactly above the diagonal (padding and a sliding window besides, as ``CausalMaskBool``)."""
    CLAIM = "is the scores with −inf where the mask blocks"

    DERIVES = "out"  # where the masked scores are not marked (SDPA hides them): the probabilities derive from these
    # without a marked mask: the step's own masked entries, the causal rule asked of them
    OPTIONAL = (("mask",), ("q",), ("k",))
    PROPERTIES = (Property("no query attends to a later key", "the step's scores above the diagonal, with no mask "
                           "marked", _masked_sees_later),)
    BUG_FORMS = (BugForm(MASK_AT_KEYS_START, "the masked entries vs keys 0 … i allowed for query i, more keys than "
                         "queries", _masked_at_keys_start), SINKS_MASKED_BEHIND)

    out: Ref = THIS
    scores: Ref
    mask: Ref | None = None
    q: Ref | None = None  # with the keys: whether the scores step is already scaled (``scaled_at_the_mask``)
    k: Ref | None = None

    def derive(self, s: TensorSource) -> torch.Tensor | None:
        if self.mask is None:
            return None
        allowed = allowed_with_sinks(s.cpu(self.mask), s.t(self.scores).shape[-1])[0]
        return s.t(self.scores).masked_fill(~allowed, float("-inf"))

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        claim, passed, detail = self._masked(s, s.t(self.scores))
        if not passed and (scaled := scaled_at_the_mask(self, s)) is not None:
            claim, again, more = self._masked(s, scaled[0])
            if again:
                return f"{claim}, {scaled[1]}", again, more
        return claim, passed, detail

    def _masked(self, s: TensorSource, scores: torch.Tensor) -> tuple[str, bool, str]:
        got = s.t(self.out)
        if self.mask is None:
            passed, detail = causal_by_own_pattern(got, scores)
            return "the scores where a causal mask allows, masked above the diagonal", passed, detail
        allowed, mask, sinks = allowed_with_sinks(s.cpu(self.mask), got.shape[-1])  # sinks' columns (sinks.py)
        recomputed, how = masked_as_written(got, scores, allowed, mask)
        passed, detail = close(got, recomputed, f"recomputed: the scores with {how}" + (
            f", the mask read with {sinks} always-allowed columns in front ({sinks_said(sinks, got.shape[-1])})"
            if sinks else ""))
        blocked = masked_entries(got, scores)  # −inf, a finite masking value, or moved down by one
        if is_decay(s.cpu(self.mask)):  # a decay mask multiplied in: 0 where it blocks (retention)
            blocked = (got == 0) & (~allowed).expand_as(got) | blocked
        exact = torch.equal(blocked, (~allowed).expand_as(got))
        return "the scores where the mask allows, masked where it blocks", passed and exact, (
            f"{int(blocked.sum()):,} entries are masked, exactly the blocked ones: {exact}; " + detail
        )
