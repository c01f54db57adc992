"""The context per head, ``probs·V`` (B, h, T, hs); and where the probabilities are never a tensor of the script (an
attention fused into ``F.scaled_dot_product_attention``: nothing between the projections and the context can be
marked), the same claim with the probabilities rebuilt from the queries and keys the script's other steps captured, as
the call computes them: softmax(Q·Kᵀ/√hs), every key seen (a Vision Transformer's attention has no mask). A context
computed with another scale, or merged without moving the heads axis back, is named by its bug form."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from transformer_trace.checks.context_forms import CONTEXT_FORMS
from transformer_trace.checks.attention_dropout import DROPOUT_FORMS
from transformer_trace.checks.base import THIS, Check, CheckResult, TraceUse, close
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.checks.grouped import as_query_heads, fitted_heads
from transformer_trace.checks.rotary import attention_operand
from transformer_trace.sources import Ref, TensorSource

FUSED_CLAIM = "equals softmax(Q·Kᵀ/√hs)·V, the probabilities computed inside the call"


def _merged_in_place(context: torch.Tensor) -> torch.Tensor:
    """A (B, h, T, hs) context merged to (B, T, C) without moving the heads axis, then split into heads as the
    catalogue reads it."""
    B, H, T, hs = context.shape
    return context.reshape(B, T, H * hs).reshape(B, T, H, hs).transpose(1, 2)


def _heads_of_merged_in_place(check: Any, s: TensorSource) -> Fit | None:
    """Per-head context read from a (B, T, C) merged without the transpose: probs·V reshaped straight to (B, T, C),
    then split into heads as the catalogue reads it."""
    read = _merged_in_place(check.context(s, check.weights(s)))
    fits, detail = close(s.t(check.out), read, "vs probs·V merged without the transpose, then split into heads")
    return Fit(fits, f"the heads were merged without moving the heads axis back: your {s.name(check.out)} is "
               f"(probs·V) of shape (B, h, T, hs) reshaped straight to (B, T, C) ({detail})" if fits else detail)


MERGED_IN_PLACE = BugForm("heads merged without moving the axis back", "the output vs probs·V merged without the "
                          "transpose", _heads_of_merged_in_place)


def _values_alone(check: Any, s: TensorSource) -> Fit | None:
    """The context that is its values row for row: each query's weights summed to 1 and dropped (an einsum that labels
    the values by the query axis). Read beyond the first row, which a causal context's row 0 equals whatever its
    weights; evidence only where a weighted sum of the rows would differ: more than one position, and value rows
    beyond the first unlike it (values alike in every row give V back whatever the weights)."""
    out, v = s.t(check.out), s.t(check.v_heads)
    if out.dim() != 4 or out.shape[-2] < 2:
        return None
    values = fitted_heads(v, out.shape[1], out.shape[-1], lambda heads: heads, out)[0]
    if values.shape != out.shape or close(values[..., 1:, :], values[..., :1, :].expand_as(values[..., 1:, :]), "")[0]:
        return None
    fits, detail = close(out[..., 1:, :], values[..., 1:, :], f"vs {s.name(check.v_heads)} itself, every row beyond "
                         "the first")
    return Fit(fits, f"the weights were not applied: your {s.name(check.out)} is {s.name(check.v_heads)} itself, each "
               "query's context its own value row, where the weighted sum of the values belongs (the weights summed "
               f"away, as by an einsum that labels the values by the query axis) ({detail})" if fits else detail)


VALUES_ALONE = BugForm("the weights not applied: the context equals V", "the output vs V itself, row for row beyond "
                       "the first", _values_alone)


@dataclass(frozen=True, kw_only=True)
class ContextHeads(Check):
    """Tensors only: ``out`` (B, h, T, hs) is probs·V. Where the probabilities were not captured but the queries and
    keys were, the fused form (``FusedContextHeads``) is checked instead of saying the step needs them."""
    CLAIM = "is probs·V, per head"

    # the weights the line read, where they are not the probabilities' step (a differential attention's difference of
    # maps: trace/reading/difference_context.py)
    TRACE = TraceUse(reads_locals=True)

    DERIVES = "out"
    OPTIONAL = (("q", "k"),)
    BUG_FORMS = (VALUES_ALONE, MERGED_IN_PLACE, *CONTEXT_FORMS, *DROPOUT_FORMS)

    out: Ref = THIS
    probs: Ref
    v_heads: Ref
    q: Ref | None = None  # the queries and keys, per head or whole: read only by the bug forms and the fused form
    k: Ref | None = None

    def context(self, s: TensorSource, weights: torch.Tensor) -> torch.Tensor:
        """probs·V; values of fewer heads (grouped-query) repeated in the order whose context holds the step's
        values."""
        v = s.t(self.v_heads)
        if not s.has(self.out):
            return weights @ as_query_heads(v, weights.shape[1])
        return weights @ fitted_heads(v, weights.shape[1], v.shape[-1], lambda v: weights @ v, s.t(self.out),
                                      sort=True)[0]

    def weights(self, s: TensorSource) -> torch.Tensor:
        return s.t(self.probs)

    def derive(self, s: TensorSource) -> torch.Tensor | None:
        return self.context(s, s.t(self.probs))

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        expected = self.context(s, s.t(self.probs))
        passed, detail = close(s.t(self.out), expected, "recomputed attention probabilities @ V")
        return "equals probabilities @ V", passed, detail

    def run(self, s: TensorSource) -> CheckResult:
        if self.q is not None and self.k is not None and not s.has(self.probs) \
                and all(s.has(ref) for ref in (self.out, self.q, self.k, self.v_heads)):
            return FusedContextHeads(out=self.out, v_heads=self.v_heads, q=self.q, k=self.k).run(s)
        return super().run(s)


def _unscaled(check: FusedContextHeads, s: TensorSource) -> Fit:
    """The context from softmax(Q·Kᵀ) without the 1/√hs (``scale=1.0`` given to the fused call)."""
    hs = s.t(check.out).shape[-1]
    fits, detail = close(s.t(check.out), check.context(s, check.weights(s, scaled=False)),
                         "vs the context from softmax(Q·Kᵀ) unscaled")
    return Fit(fits, f"your {s.name(check.out)} is computed from Q·Kᵀ without the 1/√{hs} (= {1 / math.sqrt(hs):.4f}) "
               f"scaling ({detail})" if fits else detail)


def _causal(check: FusedContextHeads, s: TensorSource) -> Fit | None:
    """The context with every key after its query masked out (``is_causal=True`` given to the fused call of a model
    whose queries see every key: an image encoder)."""
    scores = check.scores(s)
    if scores.shape[-1] != scores.shape[-2] or scores.shape[-1] < 2:
        return None
    later = torch.ones(scores.shape[-2:], dtype=torch.bool).triu(1)
    fits, detail = close(s.t(check.out), check.context(s, torch.softmax(scores.masked_fill(later, -math.inf), -1)),
                         "vs the context with a causal mask (each query sees the keys up to its own position only)")
    return Fit(fits, f"a causal mask was applied where every key belongs: your {s.name(check.out)} is computed with "
               f"each query seeing only the keys up to its own position ({detail})" if fits else detail)


@dataclass(frozen=True, kw_only=True)
class FusedContextHeads(Check):
    """Tensors only: ``out`` (B, h, T, hs) is softmax(Q·Kᵀ/√hs)·V, the queries ``q`` and keys ``k`` per head or whole
    (B, T, C), every key seen: the context of an attention whose probabilities are never a tensor (the module
    docstring)."""

    BUG_FORMS = (BugForm("1/√d missing", "the output vs the context from the softmax of Q·Kᵀ unscaled", _unscaled),
                 BugForm("a causal mask where none belongs", "the output vs the context with every later key masked "
                         "out", _causal),
                 VALUES_ALONE, MERGED_IN_PLACE)

    out: Ref = THIS
    v_heads: Ref
    q: Ref
    k: Ref

    def context(self, s: TensorSource, weights: torch.Tensor) -> torch.Tensor:
        return weights @ as_query_heads(s.t(self.v_heads), weights.shape[1])

    def scores(self, s: TensorSource, scaled: bool = True) -> torch.Tensor:
        """Q·Kᵀ/√hs (unscaled where not ``scaled``), the heads those of the step."""
        heads = s.t(self.out).shape[1]
        q = as_query_heads(attention_operand(s, self.q), heads)
        k = as_query_heads(attention_operand(s, self.k), heads, q.shape[-1])  # grouped keys: as repeat_interleave
        return q @ k.transpose(-2, -1) / (math.sqrt(q.shape[-1]) if scaled else 1.0)

    def weights(self, s: TensorSource, scaled: bool = True) -> torch.Tensor:
        """softmax(Q·Kᵀ/√hs) over the keys (unscaled where not ``scaled``), the heads those of the step."""
        return torch.softmax(self.scores(s, scaled), dim=-1)

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        passed, detail = close(s.t(self.out), self.context(s, self.weights(s)),
                               "recomputed softmax(Q·Kᵀ/√hs)·V from the captured q, k and v (the probabilities are "
                               "never a tensor of the script)")
        return FUSED_CLAIM, passed, detail
