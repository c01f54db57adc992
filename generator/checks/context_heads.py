"""The context per head, ``probs·V`` (B, h, T, hs); and where the probabilities are never a tensor of the script (an
attention fused into ``F.scaled_dot_product_attention``: nothing between the projections and the context can be
marked), the same claim with the probabilities rebuilt from the queries and keys the script's other steps captured, as
the call computes them: softmax(Q·Kᵀ/√hs), every key seen (a Vision Transformer's attention has no mask). A context
computed with another scale, or merged without moving the heads axis back, is named by its bug form. The heads'
contexts concatenated (``ContextConcat``, B, T, C) likewise. Over attention sinks, V's sink rows are fitted
(sinks.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from transformer_trace.checks.attention_dropout import DROPOUT_FORMS
from transformer_trace.checks.context_forms import CONTEXT_FORMS
from transformer_trace.checks.base import THIS, Check, CheckResult, TraceUse, close
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.checks.grouped import as_query_heads, fitted_heads, joined_notes
from transformer_trace.checks.head_merge import context_merged_in_place
from transformer_trace.checks.rotary import attention_operand
from transformer_trace.checks.sinks import values_with_sinks
from transformer_trace.sources import Ref, TensorSource
from transformer_trace.trace.child.protocol import ModuleKind

FUSED_CLAIM = "equals softmax(Q·Kᵀ/√hs)·V, the probabilities computed inside the call"


@dataclass(frozen=True, kw_only=True)
class ContextConcat(Check):
    """Tensors only: ``out`` (B, T, C) is probs·V per head with the heads concatenated; ``v`` per head (B, h, S, hs) or
    whole (B, S, C), then split into the probabilities' heads."""
    CLAIM = "is probs·V per head, the heads side by side"

    DERIVES = "out"
    OPTIONAL = (("q", "k"),)
    # an nn.MultiheadAttention's output marked here, its heads inside PyTorch (trace/reading/attention_rows.py)
    TRACE = TraceUse(also_calls=frozenset({ModuleKind.MULTIHEAD_ATTENTION}))
    BUG_FORMS = (BugForm("heads merged without moving the axis back", "the output vs (weights·V) reshaped without "
                         "the transpose", context_merged_in_place), *CONTEXT_FORMS, *DROPOUT_FORMS)

    out: Ref = THIS
    probs: Ref
    v: Ref
    q: Ref | None = None  # the queries and keys, per head or whole: read only by the bug forms
    k: Ref | None = None

    def context(self, s: TensorSource, weights: torch.Tensor) -> torch.Tensor:
        """weights·V per head, the heads concatenated: (B, h, T, S) -> (B, T, C)."""
        ctx = self.per_head(s, weights)  # (B, h, T, hs)
        return ctx.transpose(1, 2).reshape(ctx.shape[0], ctx.shape[2], -1)

    def per_head(self, s: TensorSource, weights: torch.Tensor) -> torch.Tensor:
        return weights @ self.values(s, weights)[0]

    def values(self, s: TensorSource, weights: torch.Tensor) -> tuple[torch.Tensor, str]:
        """V per head for the h heads of ``weights``, and what was read of a grouping: values of fewer heads (grouped-
        query) repeated in the order whose context holds the step's values (sorted: a merge in another layout keeps
        them)."""
        h, v = weights.shape[1], s.t(self.v)
        queries = as_query_heads(s.t(self.q), h) if self.q is not None and s.has(self.q) else None
        hs = s.t(self.out).shape[-1] // h if s.has(self.out) else queries.shape[-1] if queries is not None else None
        if not s.has(self.out):
            return as_query_heads(v, h, hs), ""
        out = s.t(self.out)  # the sinks' value rows fitted from it, per head (sinks.py)
        per_head = out.reshape(out.shape[0], out.shape[1], h, -1).transpose(1, 2) if out.dim() == 3 else out
        read, note = fitted_heads(v, h, hs, lambda v: weights @ values_with_sinks(v, weights, per_head)[0], out,
                                  sort=True)
        read, sinks = values_with_sinks(read, weights, per_head)
        return read, "; ".join(filter(None, (note, sinks)))

    def derive(self, s: TensorSource) -> torch.Tensor | None:
        return self.context(s, s.t(self.probs))

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        joined, grouped = self.context(s, s.t(self.probs)), joined_notes([self.values(s, s.t(self.probs))[1]])
        passed, detail = close(s.t(self.out), joined, f"recomputed (weights·V) per head, heads concatenated{grouped}")
        return "equals the heads' weights·V, concatenated", passed, detail


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
        return weights @ self.values(s, weights)[0]

    def values(self, s: TensorSource, weights: torch.Tensor) -> tuple[torch.Tensor, str]:
        """V as the heads of ``weights`` read it, and what was fitted of it in words: the sinks' value rows in front
        where the weights are over attention sinks too (sinks.py)."""
        v = s.t(self.v_heads)
        if not s.has(self.out):
            return as_query_heads(v, weights.shape[1]), ""
        out = s.t(self.out)
        heads = fitted_heads(v, weights.shape[1], v.shape[-1],
                             lambda v: weights @ values_with_sinks(v, weights, out)[0], out, sort=True)[0]
        return values_with_sinks(heads, weights, out)

    def weights(self, s: TensorSource) -> torch.Tensor:
        return s.t(self.probs)

    def derive(self, s: TensorSource) -> torch.Tensor | None:
        return self.context(s, s.t(self.probs))

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        values, sinks = self.values(s, s.t(self.probs))
        passed, detail = close(s.t(self.out), s.t(self.probs) @ values, "recomputed attention probabilities @ V"
                               + (f" ({sinks})" if sinks else ""))
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
