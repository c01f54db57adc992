"""The forms a context (the probabilities times the values, per head or with the heads concatenated) takes when it is
computed wrongly from what the step's check reads (checks/context_heads.py ``ContextConcat`` and
``ContextHeads``): the context rebuilt from the queries and keys with the mask or the scale left out, or computed from
the probabilities transposed. Each needs a ``context(s, weights)`` of the check: its context from given weights."""

from __future__ import annotations

import math
from typing import Any

import torch

from transformer_trace.checks.attention_dropout import weights_rebuilt
from transformer_trace.checks.base import close
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.sources import TensorSource


def _probabilities_transposed(check: Any, s: TensorSource) -> Fit | None:
    """The context from the probabilities transposed, Pᵀ·V (an einsum with the query and key labels swapped): each
    query's output sums the values of the queries that attend to it. Only for square weights that are not symmetric,
    where Pᵀ·V differs from P·V."""
    weights = s.t(check.probs)
    if weights.dim() != 4 or weights.shape[-1] != weights.shape[-2] or weights.shape[-1] < 2 \
            or torch.allclose(weights, weights.transpose(-2, -1)):
        return None
    fits, detail = close(s.t(check.out), check.context(s, weights.transpose(-2, -1)), "vs the context from the "
                         "probabilities transposed, Pᵀ·V")
    return Fit(fits, f"your {s.name(check.out)} is computed from the probabilities transposed: each query's output "
               f"sums the values of the queries that attend to it, not of the keys it attends to ({detail})"
               if fits else detail)


def _context_without_mask(check: Any, s: TensorSource) -> Fit | None:
    """The context from every key, a later or padded one included: the softmax of Q·Kᵀ/√hs with no mask (an SDPA call
    without ``is_causal`` or its ``attn_mask``), where the probabilities block some keys."""
    if check.q is None or check.k is None or not bool((s.t(check.probs) == 0).any()):
        return None
    weights, hs = weights_rebuilt(check, s, masked=False, scaled=True)
    fits, detail = close(s.t(check.out), check.context(s, weights), f"vs the context from softmax(Q·Kᵀ/√{hs}) "
                         "with no mask")
    return Fit(fits, f"your {s.name(check.out)} is computed without its mask: every query attends to every key, "
               f"those its probabilities give no weight included ({detail})" if fits else detail)


def _context_unscaled(check: Any, s: TensorSource) -> Fit | None:
    """The context from the softmax of Q·Kᵀ without the 1/√hs (an SDPA call told ``scale=1.0``), masked as the
    probabilities are."""
    if check.q is None or check.k is None:
        return None
    weights, hs = weights_rebuilt(check, s, masked=True, scaled=False)
    fits, detail = close(s.t(check.out), check.context(s, weights), "vs the context from softmax(Q·Kᵀ) unscaled")
    return Fit(fits, f"your {s.name(check.out)} is computed from Q·Kᵀ without the 1/√{hs} (= {1 / math.sqrt(hs):.4f}) "
               f"scaling ({detail})" if fits else detail)


CONTEXT_FORMS = (BugForm("the context computed without its mask", "the output vs the context from the softmax of "
                         "Q·Kᵀ/√hs with no mask", _context_without_mask),
                 BugForm("1/√d missing", "the output vs the context from the softmax of Q·Kᵀ unscaled, masked as "
                         "the probabilities are", _context_unscaled),
                 BugForm("the probabilities transposed", "the output vs the context from the probabilities transposed, "
                         "Pᵀ·V", _probabilities_transposed))
