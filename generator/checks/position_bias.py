"""A position bias added to the attention scores (T5's learned relative bias, ALiBi's slopes): the scores are
Q·Kᵀ × scale plus a term that is the same for every batch item and depends on the key's offset from the query only,
one value per head and offset. Such a bias is fitted from the scores themselves (scores − Q·Kᵀ × scale), so the
scale is still judged: Q·Kᵀ/√hs plus a relative bias is a correct form, Q·Kᵀ unscaled plus one is 1/√d missing."""

from __future__ import annotations

import torch

from transformer_trace.checks.base import close


def relative_bias(scores: torch.Tensor, product: torch.Tensor) -> tuple[bool, str]:
    """Whether ``scores`` − ``product`` (both (B, h, Lq, Lk)) is a relative position bias: the same for every batch
    item, constant along each diagonal of every head (a function of key − query only), and not one constant (no
    bias at all is the plain form). Entries masked to ±inf on either side are left out. (fits, detail)."""
    if scores.dim() != 4 or scores.shape != product.shape or min(scores.shape[-2:]) < 2:
        return False, "no (B, h, L, L) scores to fit a position bias from"
    bias = scores - product
    finite = torch.isfinite(bias)
    if not bool(finite.all()):  # a mask applied already: only the entries every item and diagonal neighbour keep
        return False, "the scores hold masked entries: a position bias is fitted before the mask only"
    shared = bias[:1].expand_as(bias)
    same_items, items = close(bias, shared, "the bias of every batch item vs the first item's")
    along, diagonals = close(bias[..., 1:, 1:], bias[..., :-1, :-1], "the bias vs itself one query and one key on")
    # one constant (per head) carries no position, and no softmax sees it: that is no position bias
    constant, _ = close(bias, bias.mean(dim=(-2, -1), keepdim=True).expand_as(bias), "")
    return same_items and along and not constant, f"{items}; {diagonals}"


def bias_claim(scale: str) -> str:
    """The claim of scores that are Q·Kᵀ × ``scale`` plus a relative position bias."""
    return (f"equals Q·Kᵀ{scale} plus a relative position bias (one value per head and key − query offset, the same "
            "for every batch item: T5's learned bias, ALiBi)")
