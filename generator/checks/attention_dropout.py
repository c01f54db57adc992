"""The attention's context through a dropout on its weights (``F.scaled_dot_product_attention(..., dropout_p=p)``, or
``attn_dropout`` between the softmax and V), read back from the tensors: per query row the context is Σ_k c_k·V_k, the
coefficients read by least squares against the values (determined where the keys are at most hs, the values then
independent), each c_k either 0 (dropped) or the weight times one common 1/(1 − p), p fitted. Where the weights
the check knows fit so, the bug form ``ATTENTION_DROPOUT`` fits; whether that is a bug depends on the mode the run was
in, which the checks do not see: trace/reading/eval_dropout.py judges it (a bug in eval mode; in training mode a
correct form, never red for its randomness). Under the dropout's pattern the context's own bug forms are tried too
(the mask left out, the 1/√hs left out, the heads merged without moving the axis back), so a bug a dropout hides is
still named."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import torch

from transformer_trace.checks.base import close
from transformer_trace.checks.dropout import DropoutFit
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.checks.grouped import as_query_heads, fitted_heads
from transformer_trace.checks.rotary import attention_operand
from transformer_trace.sources import TensorSource

ATTENTION_DROPOUT = "attention dropout active"
# said in the message of every bug form tried under the dropout's pattern (eval_dropout.py reads it)
UNDER_DROPOUT = "through a dropout on the attention weights"


def dropped_weights(got: torch.Tensor, weights: torch.Tensor, v: torch.Tensor, what: str) -> DropoutFit | None:
    """``got`` (B, h, T, hs) as (``weights`` through a dropout)·``v`` (weights (B, h, T, S), v (B, h, S, hs)): p
    fitted, how many of the non-zero weights it zeroed (``total``: how many there are); None where it is not, or where
    the coefficients cannot be read back (more keys than hs)."""
    if got.dim() != 4 or weights.dim() != 4 or v.dim() != 4 or got.shape[:-1] != weights.shape[:-1] \
            or v.shape[-2] != weights.shape[-1] or v.shape[-1] != got.shape[-1] or v.shape[-2] > v.shape[-1]:
        return None
    got, weights, v = got.double(), weights.double(), v.double()
    live = weights > 1e-6 * weights.amax(-1, keepdim=True).clamp_min(1e-300)
    coefficients = _coefficients(got, v, live)
    kept = live & (coefficients.abs() > 0.5 * weights)
    dropped = live & ~kept
    if not bool(kept.any()) or not bool(dropped.any()):
        return None
    scale = float((coefficients[kept] / weights[kept]).median())
    if not 1.0 < scale < 1e3:
        return None
    rebuilt = torch.where(kept, weights * scale, torch.zeros_like(weights)) @ v
    fits, detail = close(got, rebuilt, f"{what}, each weight zeroed where dropped and times {scale:.4f} elsewhere")
    if not fits:
        return None
    return DropoutFit(p=1.0 - 1.0 / scale, zeroed=int(dropped.sum()), total=int(live.sum()), detail=detail)


def _weights_dropped(found: DropoutFit) -> str:
    """The fit said of the attention weights: how many of the non-zero ones it zeroed, and p."""
    return (f"{UNDER_DROPOUT}: {found.zeroed:,} of {found.total:,} non-zero weights zeroed, the others times "
            f"1/(1−p) with p = {found.p:.3f} fitted ({found.detail})")


def _coefficients(got: torch.Tensor, v: torch.Tensor, live: torch.Tensor) -> torch.Tensor:
    """Each query row's weights as the context holds them, (B, h, T, S): the row read by least squares as a
    combination of the values of the keys its weights reach (``live``: a causal row's earlier keys), 0 elsewhere."""
    coefficients = torch.zeros(live.shape, dtype=got.dtype)
    for b, head, row in itertools.product(*map(range, live.shape[:-1])):
        keys = live[b, head, row]
        if bool(keys.any()):
            found = torch.linalg.lstsq(v[b, head][keys].T, got[b, head, row].unsqueeze(-1)).solution
            coefficients[b, head, row, keys] = found.squeeze(-1)
    return coefficients


def _heads(check: Any, s: TensorSource, h: int, moved: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The step's context per head (B, h, T, hs), as the script merged it (``moved``: the heads axis moved back before
    the merge; else reshaped straight), and the values per head."""
    out = s.t(check.out)
    if hasattr(check, "v_heads"):  # read per head: where merged in place, the catalogue's split undone first
        v = as_query_heads(s.t(check.v_heads), h)
        if moved:
            return out, v
        B, _, T, hs = out.shape
        return out.transpose(1, 2).reshape(B, T, h * hs).reshape(B, h, T, hs), v
    B, T, C = out.shape
    v = as_query_heads(s.t(check.v), h, C // h)
    if moved:
        return out.reshape(B, T, h, C // h).transpose(1, 2), v
    return out.reshape(B, h, T, C // h), v


def _under_dropout(weights_of: Callable[[Any, TensorSource], tuple[torch.Tensor, str]], moved: bool,
                   said: str) -> Callable[[Any, TensorSource], Fit | None]:
    """A bug form's test: the context from the weights ``weights_of`` gives (and what they are), merged as ``moved``
    says, through a dropout on the weights."""
    def test(check: Any, s: TensorSource) -> Fit | None:
        weights, what = weights_of(check, s)
        got, v = _heads(check, s, weights.shape[1], moved)
        found = dropped_weights(got, weights, v, f"vs {what}·V")
        if found is None:
            keys, hs = v.shape[-2], v.shape[-1]
            return Fit(False, f"the context read as ({what} through a dropout)·V does not fit" if keys <= hs else
                       f"not read: {keys} keys outnumber hs = {hs}, so the weights a context row holds are not "
                       "determined by it")
        return Fit(True, f"your {s.name(check.out)} {said}, {_weights_dropped(found)}")
    return test


def weights_rebuilt(check: Any, s: TensorSource, *, masked: bool, scaled: bool) -> tuple[torch.Tensor, int]:
    """The attention weights rebuilt from the queries and keys the context check reads (``check.q``, ``check.k``): the
    softmax of Q·Kᵀ (÷√hs where ``scaled``), with the keys the probabilities give no weight blocked where ``masked``;
    and hs."""
    probs = s.t(check.probs)
    q = as_query_heads(attention_operand(s, check.q), probs.shape[1])
    k, _ = fitted_heads(attention_operand(s, check.k), probs.shape[1], q.shape[-1],
                        lambda k: torch.softmax(q @ k.transpose(-2, -1), dim=-1), probs)  # grouped keys: as probs
    scores = q @ k.transpose(-2, -1) / (math.sqrt(q.shape[-1]) if scaled else 1.0)
    if masked:
        scores = scores.masked_fill(probs == 0, float("-inf"))
    return torch.softmax(scores, dim=-1), q.shape[-1]


def _probabilities(check: Any, s: TensorSource) -> tuple[torch.Tensor, str]:
    return s.t(check.probs), "the probabilities"


def _without_mask(check: Any, s: TensorSource) -> tuple[torch.Tensor, str]:
    if check.q is None or check.k is None or not bool((s.t(check.probs) == 0).any()):
        raise ValueError("no queries and keys, or no mask to leave out")
    weights, hs = weights_rebuilt(check, s, masked=False, scaled=True)
    return weights, f"softmax(Q·Kᵀ/√{hs}) with no mask"


def _unscaled(check: Any, s: TensorSource) -> tuple[torch.Tensor, str]:
    if check.q is None or check.k is None:
        raise ValueError("no queries and keys")
    weights, hs = weights_rebuilt(check, s, masked=True, scaled=False)
    return weights, f"softmax(Q·Kᵀ) unscaled (no 1/√{hs} = {1 / math.sqrt(hs):.4f})"


# after the context check's own forms: the correct weights through a dropout, then each bug form under its pattern
DROPOUT_FORMS = (
    BugForm(ATTENTION_DROPOUT, "the context as (probabilities through a dropout)·V, the coefficients of each query row "
            "read by least squares, p fitted", _under_dropout(_probabilities, True, "is probs·V")),
    BugForm("the context computed without its mask", "the context as (softmax(Q·Kᵀ/√hs), no mask, through a "
            "dropout)·V", _under_dropout(_without_mask, True, "is computed without its mask: every query attends "
                                         "to every key")),
    BugForm("1/√d missing", "the context as (softmax(Q·Kᵀ) unscaled through a dropout)·V",
            _under_dropout(_unscaled, True, "is computed from Q·Kᵀ without the 1/√hs scaling")),
    BugForm("heads merged without moving the axis back", "the context as (probabilities through a dropout)·V, "
            "merged without the transpose", _under_dropout(_probabilities, False, "is probs·V of shape (B, h, T, hs) "
                                                          "reshaped straight to (B, T, C), the heads axis not moved "
                                                          "back")),
)
