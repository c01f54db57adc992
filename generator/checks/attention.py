"""Attention checks (tensors only, but the fused projection): the heads split and re-joined, the scores Q·Kᵀ/√hs, the
probability rows (a padding mask the step does not show recognised); the context weights·V is context_heads.py's. Scores
and probabilities over attention sinks besides the positions are read on their token columns (sinks.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from transformer_trace.checks.base import (THIS, BoundT, CallBinder, Check, TraceUse, close, linear, softmax_factor,
                                          tolerance)
from transformer_trace.checks.blind_rows import EVERY_KEY_MASKED
from transformer_trace.checks.differential import half_product
from transformer_trace.checks.dropout import SOFTMAX_DROPOUT_CLAIM, through_dropout
from transformer_trace.checks.evidence import BugForm, Fit, Property
from transformer_trace.checks.grouped import (as_query_heads, fitted_heads, grouped_apart, grouped_rejoin, joined_notes,
                                             kv_heads)
from transformer_trace.checks.head_merge import split_in_place
from transformer_trace.checks.head_norm import normed_heads
from transformer_trace.checks.masks import MASK_HONOURED, future_entries, mask_allows, padding_fit, sees_nothing
from transformer_trace.checks.position_bias import T5_CLAIM, bias_inside_softmax, t5_form
from transformer_trace.checks.projected_alike import equal_to_earlier_part, kv_part, projected_as_another
from transformer_trace.checks.retention import is_decay
from transformer_trace.checks.rotary import attention_operand, rotation_of
from transformer_trace.checks.scale_forms import (close_scaled, scores_another_scale, scores_unscaled,
                                                  softmax_applies_no_scale, weights_unscaled)
from transformer_trace.checks.fitted_bias import keys_kept
from transformer_trace.checks.self_mask import SCORE_FORMS, masked_or_scaled_per_head
from transformer_trace.checks.sinks import sink_count, sinks_said
from transformer_trace.checks.soft_cap import capped_scores, capped_undivided, capped_unscaled
from transformer_trace.sources import ModuleRef, Ref, TensorSource
from transformer_trace.trace.child.protocol import ModuleKind


@dataclass(frozen=True, kw_only=True)
class HeadsRejoin(Check):
    """Head split/merge (tensors only): each per-head tensor (B, h, L, hs) re-joins to its full projection (B, L, C)."""
    CLAIM = "each head's tensor joins back to the whole projection"

    # the projections a split-only line reads and no snapshot shows, or the Linear the line called
    # (trace/reading/weights.py)
    TRACE = TraceUse(reads_locals=True, also_calls=frozenset({ModuleKind.LINEAR}))
    BUG_FORMS = (BugForm("heads split without moving the axis", "each per-head tensor vs its projection reshaped "
                         "without the transpose", split_in_place),
                 BugForm("key and value heads grouped differently", "the key and value heads vs their projections "
                         "repeated to the query heads, each in the order that fits", grouped_apart))

    heads: tuple[Ref, ...]
    full: tuple[Ref, ...]

    def bound_by(self, calls: CallBinder[BoundT]) -> BoundT | None:
        """Bound to the whole projections the traced line's calls (or the tensors it read) give, where none is shown."""
        return calls.projections(self)

    def derive_by_layout(self, s: TensorSource, dims: Mapping[str, int]) -> dict[Ref, tuple[torch.Tensor, Ref]]:
        """Each per-head tensor the source lacks, split from its whole projection (B, L, C) into the ``h`` heads the
        trace bound: the catalogue's head split (B, L, C) -> (B, h, L, hs)."""
        heads, hs = dims.get("h"), dims.get("hs")
        return {h_ref: (as_query_heads(s.t(f_ref), heads, hs, repeat=False), f_ref)
                for h_ref, f_ref in zip(self.heads, self.full)
                if heads and not s.has(h_ref) and s.has(f_ref) and s.t(f_ref).dim() == 3
                and (s.t(f_ref).shape[-1] % heads == 0 or kv_heads(s.t(f_ref), heads, hs))}

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        details, passed, notes, normed_parts = [], True, [], []
        for part, (h_ref, f_ref) in enumerate(zip(self.heads, self.full)):
            h, full = s.t(h_ref), s.t(f_ref)  # (B, h, L, hs)
            B, H, L, hs = h.shape
            grouped = grouped_rejoin(h, full)  # key/value heads fewer than the step's, read after their repeat
            ok = grouped[0] if grouped else close(h.transpose(1, 2).reshape(B, L, H * hs), full, "")[0]
            normed = None if ok or grouped or part > 1 or full.shape != (B, L, H * hs) else normed_heads(
                h, full.reshape(B, L, H, hs).transpose(1, 2), f"{s.name(f_ref)} split into {H} heads")
            ok = ok or normed is not None  # QK normalisation: queries or keys normalised over the head size
            notes.append(grouped[1] if grouped else "")
            normed_parts += [f"{s.name(h_ref)} after a norm over the head size"] if normed else []
            passed &= ok
            details.append(f"{s.name(h_ref)} {'re-joins' if ok else 'does NOT re-join'} to {s.name(f_ref)}")
        passed &= len(set(filter(None, notes))) < 2  # the keys and values repeated alike
        joined = ("; ".join(details) + " (transpose heads back, then merge h·hs)" + joined_notes(notes)
                  + joined_notes(normed_parts))
        return "heads re-join to the full projections", passed, joined


@dataclass(frozen=True, kw_only=True)
class ScaledScores(Check):
    """Tensors only: ``out`` = Q·Kᵀ/√hs per head, from the queries ``q`` and keys ``k``, per head (B, h, L, hs) or whole
    (B, L, C), then split into the scores' heads. Scores that are Q·Kᵀ unscaled are said to be; they pass only where
    the scale is applied inside the softmax: the probabilities ``probs`` (``probs_label``, where captured) equal the
    softmax of the scores × 1/√hs with the entries they give no weight blocked, over the keys or over the queries
    (the softmax's axis is the probabilities' own claim: a softmax over the wrong axis fails there, not here)."""
    CLAIM = "is Q·Kᵀ / √hs, per head"

    DERIVES = "out"
    OPTIONAL = (("probs",),)
    BUG_FORMS = (BugForm("1/√d missing", "the scores vs Q·Kᵀ unscaled", scores_unscaled),
                 BugForm("another scaling than 1/√hs", "the scores vs Q·Kᵀ times a fitted constant",
                         scores_another_scale), BugForm("1/√d missing", "soft-capped Q·Kᵀ unscaled", capped_unscaled),
                 BugForm("soft cap undivided", "cap · tanh(the scores), cap fitted", capped_undivided), *SCORE_FORMS)

    out: Ref = THIS
    q: Ref
    k: Ref
    probs: Ref | None = None
    probs_label: str = "the probabilities"
    # another attention of the model (its scores, q, k and probabilities), whose reading as T5's makes unscaled scores
    # with no bias of their own T5's too (its cross-attention)
    sibling: ScaledScores | None = None

    def derive(self, s: TensorSource) -> torch.Tensor | None:
        q, k = attention_operand(s, self.q), attention_operand(s, self.k)
        if q.dim() != 4 or k.shape != q.shape:  # the heads are not known from whole tensors
            return None
        return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        scores, product, hs, grouped = self.read(s)  # product: (B, h, Lq, Lk)
        passed, detail = close_scaled(scores, product, 1 / math.sqrt(hs), f"recomputed Q·Kᵀ/√{hs} per head{grouped}")
        if not passed and (read := masked_or_scaled_per_head(scores, product, hs, keys_kept(self, s))) is not None:
            return read[0], read[1], f"{detail}; {read[2]}"
        if not passed and (t5 := self.t5(s)) is not None:
            return T5_CLAIM, True, f"{detail}; {t5}"
        if not passed and (capped := capped_scores(self, s)) is not None:  # Gemma 2's soft cap (soft_cap.py)
            return capped
        if not passed:
            unscaled, plain = close_scaled(scores, product, 1.0, "recomputed Q·Kᵀ per head (unscaled)")
            probs = self.probs_over(s, scores)  # it may show no scale
            scaled_later = unscaled and not (probs is not None and softmax_applies_no_scale(probs, scores, hs))
            later = self._scaled_later(s, scores, hs) if scaled_later else None
            if later is not None:
                return f"equals Q·Kᵀ, the 1/√hs applied at the softmax ({self.probs_label})", True, f"{plain}; {later}"
            other = self._other_scale_later(s, scores) if scaled_later else None
            if other is not None:
                return (f"equals Q·Kᵀ, a scale applied at the softmax ({self.probs_label}, whose check judges its "
                        "value)"), True, f"{plain}; {other}"
            if unscaled and self.probs is not None:
                detail += f"; {self.probs_label} is not its softmax with the scaling either"
        return "equals Q·Kᵀ / √hs", passed, detail

    def t5(self, s: TensorSource) -> str | None:
        """How the scores read as T5's attention (``t5_form``), or as Q·Kᵀ unscaled beside a ``sibling`` attention
        that reads so (T5's cross-attention has no 1/√hs and no position bias); None where neither."""
        scores, product, _, _ = self.read(s)
        own = t5_form(scores, product, self.probs_over(s, scores))
        sibling = self.sibling
        if own is not None or sibling is None or not all(s.has(r) for r in (sibling.out, sibling.q, sibling.k)):
            return own
        other = sibling.t5(s) if close(scores, product, "")[0] else None
        return f"Q·Kᵀ unscaled as {s.name(sibling.out)} is, which reads as T5's ({other})" if other else None

    def probs_over(self, s: TensorSource, scores: torch.Tensor) -> torch.Tensor | None:
        """The probabilities, where captured over the keys ``scores`` hold (not where they also weigh sinks whose
        columns the scores read leave out: sinks.py)."""
        probs = s.t(self.probs) if self.probs is not None and s.has(self.probs) else None
        return probs if probs is not None and probs.shape[-1] == scores.shape[-1] else None

    def product(self, s: TensorSource) -> tuple[torch.Tensor, torch.Tensor, int]:
        """(the scores, Q·Kᵀ per head, hs), for the bug forms."""
        return self.read(s)[:3]

    def read(self, s: TensorSource) -> tuple[torch.Tensor, torch.Tensor, int, str]:
        """(the scores, Q·Kᵀ per head, hs, what was read of grouped keys in words, bracketed): keys of fewer heads
        repeated in the order whose product is nearest the scores."""
        scores, keys = s.t(self.out), attention_operand(s, self.k)
        sinks = sink_count(scores.shape[-1], keys.shape[-2])
        scores = scores[..., sinks:]  # the token columns: the sinks' keys are no snapshot's (sinks.py)
        h = scores.shape[1]
        q = as_query_heads(attention_operand(s, self.q), h)
        k, note = fitted_heads(keys, h, q.shape[-1], lambda k: q @ k.transpose(-2, -1), scores)
        notes = [note] + ([f"on the {scores.shape[-1]} token columns: {sinks_said(sinks, sinks + scores.shape[-1])}, "
                           "their columns reported, not judged (no snapshot shows their keys)"] if sinks else [])
        if (half := half_product(scores, q, k)) is not None:  # one map of a differential attention (differential.py)
            return scores, half[0], half[1], joined_notes(notes) + half[2]
        return scores, q @ k.transpose(-2, -1), q.shape[-1], joined_notes(notes)

    def _other_scale_later(self, s: TensorSource, scores: torch.Tensor) -> str | None:
        """The evidence that the probabilities are the softmax over the keys of ``scores`` times a fitted c ≠ 1 (a
        scale applied inside the softmax, of another value than 1/√hs: ``softmax(energy / √C)``): the scores are then
        right to be unscaled, and the scale's value is the softmax step's matter, not a missing 1/√d here."""
        probs = self.probs_over(s, scores)
        if probs is None:
            return None
        for axis, over in ((-1, "the keys"), (-2, "the queries: the softmax's axis is its own claim")):
            fitted = softmax_factor(probs.transpose(axis, -1), scores.transpose(axis, -1))
            if fitted is None or abs(fitted[0] - 1) < 1e-3 or fitted[0] <= 0:
                continue
            c, used = fitted
            rebuilt = torch.softmax(scores.transpose(axis, -1).masked_fill(~used, float("-inf")) * c, dim=-1)
            flat = (probs.transpose(axis, -1) - probs.transpose(axis, -1).mean(-1, keepdim=True)).abs().amax(-1) <= 1e-7
            rebuilt = torch.where(flat.unsqueeze(-1), probs.transpose(axis, -1), rebuilt)  # every entry masked
            same, detail = close(probs, rebuilt.transpose(axis, -1), f"{self.probs_label} recomputed as the softmax "
                                 f"over {over} of the scores × {c:.4g} (the factor fitted), the entries it gives no "
                                 "weight masked")
            if same:
                return detail
        return None

    def _scaled_later(self, s: TensorSource, scores: torch.Tensor, hs: int) -> str | None:
        """The evidence that the probabilities are the softmax of ``scores``/√hs (the entries they give no weight
        masked), over the keys or the queries; None where they are not (or were not captured)."""
        probs = self.probs_over(s, scores)
        if probs is None:
            return None
        if probs.shape != scores.shape:
            return None
        scaled = (scores / math.sqrt(hs)).masked_fill(probs == 0, float("-inf"))
        for axis, over in ((-1, "the keys"), (-2, "the queries: the softmax's axis is its own claim")):
            same, detail = close(probs, torch.softmax(scaled, dim=axis), f"{self.probs_label} recomputed as the "
                                 f"softmax over {over} of the scores / √{hs}, the entries it gives no weight masked")
            if same:
                return detail
        return None


def _over_queries(check: Any, s: TensorSource) -> Fit | None:
    """The columns (the query axis) sum to 1, the rows do not. A key column masked for every query (a padded key,
    −inf) is NaN under a softmax over the queries: fitted on the columns that are defined, the others said."""
    weights = s.t(check.out)
    if weights.dim() < 2:
        return None
    columns = weights.sum(-2)
    defined = torch.isfinite(columns)
    if not bool(defined.any()):
        return None
    worst = float((columns[defined] - 1).abs().max())
    rows = weights.sum(-1)
    rows_off = not bool(torch.isfinite(rows).all()) or float((rows - 1).abs().max()) > tolerance()
    fits = worst <= tolerance() and rows_off
    undefined = int((~defined).sum())
    masked = f"; {undefined:,} key columns masked for every query are NaN, left out" if undefined else ""
    return Fit(fits, f"the softmax ran over the wrong axis: it is the columns (the query axis) that sum to 1 "
               f"({int(defined.sum()):,} columns, at most {worst:.1e} away from 1{masked})" if fits
               else f"columns sum to 1 at most {worst:.1e} away")


def _rows_sum_to_one(check: Any, s: TensorSource) -> str | None:
    """Rows that do not sum to 1, among the finite ones: a row of NaN (a query whose every key is masked with −inf)
    is a form's matter, not evidence."""
    weights = s.t(check.out)
    sums = weights.sum(-1)
    finite = torch.isfinite(sums)
    if not bool(finite.any()):
        return None
    sums = torch.where(finite, sums, 1.0)
    worst, negative = float((sums - 1).abs().max()), int((weights < 0).sum())
    if worst <= tolerance() and negative == 0:
        return None
    return (f"your {s.name(check.out)} is not a probability distribution over the keys: a row sums to "
            f"{float(sums.flatten()[int((sums - 1).abs().argmax())]):.4g} ({worst:.1e} away from 1), {negative} "
            "negative weights")


def _no_later_key(check: Any, s: TensorSource) -> str | None:
    if not getattr(check, "causal", False):
        return None
    weights, blind = s.t(check.out), sees_nothing(check, s)  # a padded query's uniform row says nothing of the future
    weights = (weights if blind is None else weights.masked_fill(blind, 0.0))[..., check.sinks(s):]  # token columns
    above = future_entries(*weights.shape[-2:])
    future = float(weights[..., above].abs().max()) if above.any() else 0.0
    seen = int((weights[..., above] != 0).sum()) if above.any() else 0
    return (f"a position sees the next: {seen} weights on a later position, the largest {future:g}" if future
            else None)


def _another_temperature(check: Any, s: TensorSource) -> Fit | None:
    """The weights are the softmax of the scores times a constant c ≠ 1 (a scaling other than the scores' own, applied
    inside the softmax: 1/√C for 1/√hs, or the 1/√hs applied twice); c fitted from the log-weights row by row."""
    weights, logits = s.t(check.out), s.t(check.scores)
    fitted = softmax_factor(weights, logits)
    if fitted is None:
        return None
    c, used = fitted
    if abs(c - 1) < 1e-3 or c <= 0:
        return None
    fits, detail = close(weights, torch.softmax(logits.masked_fill(~used, float("-inf")) * c, dim=-1),
                         f"vs the softmax of the scores × {c:.4g}, the factor fitted")
    return Fit(fits, f"your weights are the softmax of the scores × {c:.4g} (= 1/{1 / c:.4g}): a scaling other than "
               f"the scores' own was applied inside the softmax ({detail})" if fits else detail)


ROWS_SUM_TO_ONE = Property("probability rows sum to 1", "every row's sum and sign", _rows_sum_to_one)


@dataclass(frozen=True, kw_only=True)
class SoftmaxRows(Check):
    """Tensors only: rows of ``out`` (over the last axis, the keys) are the softmax of ``scores`` (plus the ``mask``,
    when given: additive, or boolean where False blocks), sum to 1, never negative; ``causal``: no weight on a later
    position. Weights whose columns sum to 1 are a softmax over the wrong axis. Given the queries ``q`` and keys ``k``,
    scores that are Q·Kᵀ unscaled may have their 1/√hs applied inside the softmax: accepted too, and said to be."""
    CLAIM = "each row is the softmax of the scores over the keys and sums to 1"

    DERIVES = "out"
    OPTIONAL = (("q",), ("k",), ("decay",), ("tokens",))
    BUG_FORMS = (BugForm("softmax over the wrong axis", "the weights' columns sum to 1, their rows do not",
                         _over_queries),
                 BugForm("1/√d missing", "the weights vs the softmax of Q·Kᵀ unscaled", weights_unscaled),
                 BugForm("another scaling inside the softmax", "the weights vs the softmax of the scores times a "
                         "fitted constant", _another_temperature))
    PROPERTIES = (Property("no query attends to a later key", "the weights above the diagonal (causal)",
                           _no_later_key), ROWS_SUM_TO_ONE, MASK_HONOURED, EVERY_KEY_MASKED)

    out: Ref = THIS
    scores: Ref
    mask: Ref | None = None
    causal: bool = False
    q: Ref | None = None
    k: Ref | None = None
    decay: Ref | None = None  # the model's mask, read only to tell a retention (retention.py): no softmax
    tokens: Ref | None = None  # the keys' token IDs: evidence that real keys exist (blind_rows.py)

    def derive(self, s: TensorSource) -> torch.Tensor | None:
        """The softmax, where the blocked keys are known: from the captured mask, or the future ones of a causal
        model (without either, a padding mask the scores do not show could change it); a retention's, its scores."""
        logits = s.t(self.scores)
        if self.decay is not None and s.has(self.decay) and is_decay(s.cpu(self.decay)):
            return logits
        if self.mask is not None and s.has(self.mask):
            allowed, _ = mask_allows(s.cpu(self.mask))
        elif self.causal and self.mask is None:
            allowed = ~future_entries(*logits.shape[-2:])
        else:
            return None
        nothing = ~allowed.any(-1, keepdim=True)  # a padded query that sees no key: all masked alike, uniform
        return torch.softmax(logits.masked_fill(~allowed & ~nothing, float("-inf")).masked_fill(nothing, 0.0), dim=-1)

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        weights = s.t(self.out)
        row_sums = weights.sum(-1)
        worst_sum = float((row_sums - 1).abs().max())
        negative = int((weights < 0).sum())
        passed = worst_sum <= tolerance() and negative == 0
        detail = (f"{row_sums.numel():,} rows over the keys (last axis): a row sum is at most {worst_sum:.1e} away "
                  f"from 1{'' if worst_sum <= tolerance() else ' (NOT probability distributions)'}; "
                  f"{negative} negative weights")
        logits = s.t(self.scores)
        if self.mask is not None:
            allowed, _ = mask_allows(s.cpu(self.mask))
            nothing = ~allowed.any(-1, keepdim=True)  # a padded query that sees no key: all masked alike, uniform
            logits = logits.masked_fill(~allowed & ~nothing, float("-inf")).masked_fill(nothing, 0.0)
        sinks = self.sinks(s)
        what = "recomputed softmax over the keys" + (" of the masked scores" if self.mask else "") + (
            f" (the {sinks} sinks' columns and the {weights.shape[-1] - sinks} positions': "
            f"{sinks_said(sinks, weights.shape[-1])})" if sinks else "")
        expected = torch.softmax(logits, dim=-1)
        same, more = close(weights, expected, what)
        if not same and (padded := padding_fit(weights, logits)) is not None:  # a padding mask the step does not show
            same, more = close(weights, *padded)
        if not same:
            same, more = self._scaled_inside(s, weights, logits, (same, more))
        if not same and (biased := bias_inside_softmax(weights, logits, s.t(self.scores),
                                                       self.mask is None and not self.causal)):
            same, more = biased  # a relative-position bias (ALiBi's, T5's) added inside the softmax
        claim = "rows are probability distributions over the keys"
        if not same and (dropped := through_dropout(weights, expected, f"vs the {what}")) is not None:
            # training mode: the rows of the softmax through a dropout do not sum to 1, by design
            claim, passed, detail, same, more = SOFTMAX_DROPOUT_CLAIM, negative == 0, "", True, str(dropped)
        passed &= same
        detail += ("; " if detail else "") + more
        if self.causal:
            live = weights[..., sinks:]  # the sinks are no positions: never later than a query (sinks.py)
            above = future_entries(*live.shape[-2:])  # keys after the query (its own after a memory: masks.py)
            blind = sees_nothing(self, s)  # padded queries (uniform over every key) are left out
            live = live if blind is None else live.masked_fill(blind, 0.0)
            future = float(live[..., above].abs().max()) if above.any() else 0.0
            passed &= future == 0.0
            detail += f"; largest weight on a future position: {future:g}" + (
                f" (on the {live.shape[-1]} token columns: the sinks' columns are always allowed)" if sinks else "")
        return claim + (" (causal)" if self.causal and claim != SOFTMAX_DROPOUT_CLAIM else ""), passed, detail

    def sinks(self, s: TensorSource) -> int:
        """The attention sinks in front of the keys (sinks.py): the weights' width minus the captured keys'
        positions; 0 where the keys are not captured or as wide."""
        return sink_count(s.t(self.out).shape[-1], s.t(self.k).shape[-2]) if self.k is not None and s.has(self.k) \
            else 0

    def _scaled_inside(self, s: TensorSource, weights: torch.Tensor, logits: torch.Tensor,
                       plain: tuple[bool, str]) -> tuple[bool, str]:
        """Where the scores read are Q·Kᵀ unscaled (their finite entries), the softmax of the scores / √hs; else
        ``plain``, the comparison without the scale."""
        if self.q is None or self.k is None or weights.dim() != 4:
            return plain
        scores = s.t(self.scores)
        h = weights.shape[1]
        q = as_query_heads(attention_operand(s, self.q), h)
        k, _ = fitted_heads(attention_operand(s, self.k), h, q.shape[-1], lambda k: q @ k.transpose(-2, -1), scores)
        product = q @ k.transpose(-2, -1)
        finite = torch.isfinite(scores)
        if product.shape != scores.shape or not close(scores[finite], product[finite], "")[0]:
            return plain  # scores already scaled (or not Q·Kᵀ at all): no second scale to look for
        hs = q.shape[-1]
        return close(weights, torch.softmax(logits / math.sqrt(hs), dim=-1),
                     f"recomputed softmax over the keys of the {'masked ' if self.mask else ''}scores / √{hs} (the "
                     f"scores read are Q·Kᵀ unscaled: the 1/√{hs} applied inside the softmax)")


@dataclass(frozen=True, kw_only=True)
class LinearHeads(Check):
    """``out`` (B, h, N, hs): part ``part`` (0 q, 1 k, 2 v) of the fused projection ``module`` of ``x``, in heads."""
    CLAIM = "is its part (q, k or v) of the fused projection, split into heads"

    # without the Linear on its line: the head split of the projection the line read
    TRACE = TraceUse(calls={"module": (ModuleKind.LINEAR, "module"), "x": (ModuleKind.LINEAR, "input")},
                     reads_locals=True)
    BUG_FORMS = (BugForm("computed from another tensor", "the step vs an earlier of q, k and v, value for value",
                         projected_as_another),)

    out: Ref = THIS
    x: Ref
    module: ModuleRef
    part: int

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        fused = linear(s, self.module, s.t(self.x))  # (B, N, 3C): q, k, v side by side
        B, N, C3 = fused.shape
        got = s.t(self.out)  # (B, h, N, hs)
        H = got.shape[1]
        # a projection of its own (a trace's Linear W_q, W_k or W_v), or part ``part`` of the fused one
        C = C3 if C3 == H * got.shape[-1] else C3 // 3
        part = fused if C3 == C else fused[..., self.part * C:(self.part + 1) * C]
        expected = part.reshape(B, N, H, C // H).transpose(1, 2)  # (B, N, C) -> (B, h, N, hs)
        letter = "qkv"[self.part]
        passed, detail = close(got, expected, f"recomputed {letter} = LN(x)·W{letter}ᵀ + b, split into {H} heads")
        expected, passed, detail = (not passed and kv_part(fused, got, self.part)) or (expected, passed, detail)
        hs = C // H
        if not passed and C3 == 3 * C:  # q, k and v side by side per head (GPT-NeoX): (B, N, h, [q k v])
            per_head = fused.reshape(B, N, H, 3 * hs)[..., self.part * hs:(self.part + 1) * hs].transpose(1, 2)
            if close(got, per_head, "")[0] or rotation_of(got, per_head) is not None:
                expected = per_head
                passed, detail = close(got, expected, f"recomputed {letter} = LN(x)·W{letter}ᵀ + b, its part of each "
                                       f"head's q, k and v side by side (GPT-NeoX's layout), {H} heads")
        if not passed and C3 == 3 * C:  # q, k and v interleaved on the last axis: ``qkv.reshape(B, N, h, hs, 3)``
            interleaved = fused.reshape(B, N, H, hs, 3)[..., self.part].transpose(1, 2)
            if close(got, interleaved, "")[0]:
                expected = interleaved
                passed, detail = close(got, expected, f"recomputed {letter} = LN(x)·W{letter}ᵀ + b, feature "
                                       f"{self.part} of every three of each head's (q, k and v interleaved on the last "
                                       f"axis, `reshape(B, N, h, hs, 3)`), {H} heads")
        rotary = rotation_of(got, expected, self.part) if not passed and self.part < 2 else None
        if rotary is not None:  # queries or keys marked after their rotary positions: a fitted member of the family
            passed, detail = close(got, rotary.apply(expected), f"{detail.split(':')[0]}, rotated: {rotary}")
        normed = normed_heads(got, expected, f"{letter} = LN(x)·W{letter}ᵀ + b split into {H} heads") \
            if not passed and rotary is None and self.part < 2 else None
        if normed is not None:  # QK normalisation: a norm over the head size after the split
            passed, detail = normed
        if passed and (same := equal_to_earlier_part(self, s)) is not None:  # the Linear it called is another's
            passed, detail = False, f"{detail}; but it equals {same[0]} value for value ({same[1]})"
        what = f"the {'QKV'[self.part]} " + ("projection" if C3 == C else "part of the fused projection")
        return f"equals {what}, split into heads", passed, detail
