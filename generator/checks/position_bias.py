"""A bias added to the attention scores inside the softmax, the same for every input: a relative-position bias (ALiBi's
distances times a slope per head, T5's or Swin's learned table) where the model adds no positions to its tokens. Its
values are fitted from the weights themselves, so the probabilities step reads it as a family of correct forms."""

from __future__ import annotations

import torch

from transformer_trace.checks.base import close


def shared_bias_fit(weights: torch.Tensor, logits: torch.Tensor) -> tuple[bool, str] | None:
    """Whether ``weights`` are the softmax over the last axis of ``logits`` plus one bias (per head, query and key) that
    every item of the batch shares, with the comparison's detail; None where that cannot be told: fewer than two items
    (one item's weights fit a bias of their own whatever they are), a key given no weight or a scores entry not finite
    (a mask, whose own checks judge it), or a bias fitted that does not reproduce the weights.

    The bias is fitted row by row: log(weights) − scores is the bias less each row's log-sum-exp, so it is centred per
    row and averaged over the batch. A softmax over the wrong axis or a scale of another value inside the softmax leaves
    a difference that depends on the input, which no bias shared by the batch reproduces."""
    if weights.shape != logits.shape or weights.dim() < 3 or weights.shape[0] < 2:
        return None
    if not bool((weights > 0).all()) or not bool(torch.isfinite(logits).all()):
        return None
    gap = weights.double().log() - logits.double()
    gap = gap - gap.mean(-1, keepdim=True)
    bias = gap.mean(0, keepdim=True)
    if float(bias.abs().max()) == 0.0:
        return None
    fits, detail = close(weights, torch.softmax(logits.double() + bias, dim=-1).to(weights.dtype),
                         "vs the softmax over the keys of the scores plus one bias for every input (fitted per head, "
                         f"query and key: each row's spread up to {float(bias.amax(-1).sub(bias.amin(-1)).max()):.3g})")
    if not fits:
        return None
    return True, (f"the weights are the softmax of the scores plus a bias the same for every input, a "
                  f"relative-position bias such as ALiBi's added inside the softmax ({detail})")
