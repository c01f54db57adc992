"""A position bias added to the attention scores (T5's learned relative bias, ALiBi's slopes, Swin's table), read as
a family of correct forms with fitted values, at either step where it shows:

- the scores step (``relative_bias``): the scores are Q·Kᵀ × scale plus a term that is the same for every batch item
  and depends on the key's offset from the query only. The bias is fitted from the scores themselves (scores −
  Q·Kᵀ × scale), so the scale is still judged: Q·Kᵀ/√hs plus a relative bias is a correct form, Q·Kᵀ unscaled plus
  one is 1/√d missing. A bias that is such a function plus one constant per query row is the same under the softmax
  over the keys (ALiBi's key-only causal form, (j − T + 1)·slope, constant down each column, equals −(i − j)·slope
  there): it is accepted where the softmax-normalised scores agree, the per-head slopes said where the steps are even.
- the probabilities step (``shared_bias_fit``): the model adds the bias inside the softmax call (no positions added
  to its tokens), so the weights are the softmax of the captured scores plus one bias every input shares; or, with
  a mask, the softmax of the scores plus one value per head and key − query offset (``relative_bias_fit``).

Q·Kᵀ unscaled plus a relative bias, at either step, is T5's attention (``t5_form``): T5 leaves out the 1/√hs by
design (it folds it into the queries' initialisation), so it is a correct form known, not 1/√d missing; Q·Kᵀ
unscaled with no bias stays 1/√d missing, unless another attention of the model reads as T5's (T5's cross-attention
has no bias)."""

from __future__ import annotations

import torch

from transformer_trace.checks.base import MASK_FILL, close


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
    # a masking value (−987654321 on the diagonal) is a mask, not a bias: left out of every comparison and its scale
    masked = bias.abs() >= MASK_FILL
    shared = bias[:1].expand_as(bias)
    same_items, items = _close_unmasked(bias, shared, masked | masked[:1], "the bias of every batch item vs the first "
                                        "item's")
    along, diagonals = _close_unmasked(bias[..., 1:, 1:], bias[..., :-1, :-1],
                                       masked[..., 1:, 1:] | masked[..., :-1, :-1], "the bias vs itself one query and "
                                       "one key on")
    if same_items and not along and not bool(masked.any()) and (shifted := _shifted_per_row(bias))[0]:
        return True, f"{items}; {shifted[1]}"
    # one constant (per head) carries no position, and no softmax sees it: that is no position bias
    kept = (~masked).sum(dim=(-2, -1), keepdim=True).clamp_min(1)
    mean = bias.masked_fill(masked, 0.0).sum(dim=(-2, -1), keepdim=True) / kept
    constant, _ = _close_unmasked(bias, mean.expand_as(bias), masked, "")
    left_out = f" ({int(masked.sum()):,} masking-size entries left out: a mask)" if bool(masked.any()) else ""
    return same_items and along and not constant, f"{items}; {diagonals}{left_out}"


def _close_unmasked(actual: torch.Tensor, expected: torch.Tensor, masked: torch.Tensor, what: str) -> tuple[bool, str]:
    """``close`` over the entries ``masked`` leaves: those are set to 0 on both sides, so they set no scale."""
    return close(actual.masked_fill(masked, 0.0), expected.masked_fill(masked, 0.0), what)


def _shifted_per_row(bias: torch.Tensor) -> tuple[bool, str]:
    """Whether ``bias`` (B, h, Lq, Lk) is a function of key − query plus a constant per query row: its steps from one
    key to the next are a function of key − query (constant along the diagonals) and not all zero (a constant per row
    alone carries no position). The function is rebuilt from the steps, and the softmax over the keys of the bias and
    of the function compared. (fits, detail: the form, with the slopes per head where the steps are even)."""
    steps = bias[..., 1:] - bias[..., :-1]  # f(j + 1 − i) − f(j − i)
    if steps.shape[-1] < 2 or close(steps, torch.zeros_like(steps), "")[0]:
        return False, "no step from key to key"
    along, detail = close(steps[..., 1:, 1:], steps[..., :-1, :-1], "the bias's steps from key to key vs themselves "
                          "one query and one key on")
    if not along:
        return False, detail
    queries, keys = bias.shape[-2:]
    offsets = torch.arange(keys)[None, :] - torch.arange(queries)[:, None] + queries - 1  # j − i, from 0
    function = torch.zeros(*bias.shape[1:-2], queries + keys - 1, dtype=bias.dtype)
    for offset in range(1 - queries, keys - 1):  # f(offset + 1) = f(offset) + the step there
        query = max(0, -offset)
        function[..., offset + queries] = function[..., offset + queries - 1] + steps[0, ..., query, query + offset]
    relative = function[..., offsets].unsqueeze(0)  # (1, h, Lq, Lk)
    same, softmaxed = close(torch.softmax(bias, -1), torch.softmax(relative, -1).expand_as(bias),
                            "the softmax over the keys of the bias vs of the function of key − query rebuilt from it")
    even = close(steps, steps[..., :1, :1].expand_as(steps), "")[0]
    per_head = ", ".join(f"{v:.4g}" for v in steps[0, ..., 0, 0].flatten().tolist())
    slopes = f"; slopes per head {per_head}" if even else ""
    return same, (f"a function of key − query plus a constant per query row, which the softmax over the keys removes "
                  f"(ALiBi's key-only form{slopes}): {detail}; {softmaxed}")


def bias_claim(scale: str) -> str:
    """The claim of scores that are Q·Kᵀ × ``scale`` plus a relative position bias."""
    return (f"equals Q·Kᵀ{scale} plus a relative position bias (one value per head and key − query offset, the same "
            "for every batch item: T5's learned bias, ALiBi)")



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


T5_CLAIM = ("equals Q·Kᵀ unscaled, a relative position bias added before the softmax: T5's attention (no 1/√hs, which "
            "T5 folds into the queries' initialisation)")


# a head's least-squares cost (rows × unknowns²) a fit may take on: a ViT-B's 197 tokens cost 1.4e10
MOST_FITTED = 5e10


def relative_bias_fit(weights: torch.Tensor, logits: torch.Tensor) -> tuple[bool, str, torch.Tensor] | None:
    """Whether ``weights`` (B, h, Lq, Lk) are the softmax over the keys of ``logits`` plus a relative position bias
    added on the softmax's line (T5's learned bias, added after the scores step): one value per head and key − query
    offset, the same for every batch item, fitted by least squares on log(weights) − logits, the entries given no
    weight masked (and rows uniform over every key, a padded query that sees none, left as they are). None where the
    shapes do not fit, no entry has weight, or the plain softmax fits already (no position bias); else (fits, detail,
    the bias fitted, (1, h, Lq, Lk))."""
    if weights.dim() != 4 or weights.shape != logits.shape or min(weights.shape[-2:]) < 2:
        return None
    blind = (weights - 1.0 / weights.shape[-1]).abs().amax(-1, keepdim=True) <= 1e-6  # a padded query: uniform
    live = (weights > 0) & torch.isfinite(logits) & ~blind
    if not bool(live.any()):
        return None
    def softmax_of(x: torch.Tensor) -> torch.Tensor:
        rebuilt = torch.softmax(x.masked_fill(~live, float("-inf")), dim=-1).nan_to_num(0.0)
        return torch.where(blind, weights.double(), rebuilt).to(weights.dtype)
    if close(weights, softmax_of(logits.double()), "")[0]:
        return None  # the plain softmax fits: no position bias (asked before any fit)
    batch, heads, queries, keys = weights.shape
    if batch * queries * keys * (queries + keys + batch * queries) ** 2 > MOST_FITTED:
        return None  # a least-squares fit this size takes minutes (a (1, 1, 2, 5000) step): not tried
    offsets = (torch.arange(keys)[None, :] - torch.arange(queries)[:, None] + queries - 1).expand(batch, -1, -1)
    rows = (torch.arange(batch)[:, None, None] * queries + torch.arange(queries)[None, :, None]).expand(-1, -1, keys)
    gap = weights.double().clamp_min(1e-300).log() - logits.double()  # the bias less each row's log-sum-exp
    n = queries + keys - 1
    bias = torch.zeros(heads, n, dtype=torch.float64)
    for head in range(heads):
        used = live[:, head]
        design = torch.zeros(int(used.sum()), n + batch * queries, dtype=torch.float64)
        index = torch.arange(design.shape[0])
        design[index, offsets[used]], design[index, n + rows[used]] = 1.0, -1.0  # f(j − i) − lse(row)
        solution = torch.linalg.lstsq(design, gap[:, head][used].unsqueeze(-1), driver="gelsd").solution[:n, 0]
        bias[head] = solution - solution.mean()
    table = bias[:, offsets[0]].unsqueeze(0)  # (1, h, Lq, Lk)
    rebuilt = softmax_of(logits.double() + table)
    fits, detail = close(weights, rebuilt, "the probabilities vs the softmax over the keys of the scores plus one "
                         "value per head and key − query offset (fitted, the same for every batch item), the entries "
                         "they give no weight masked")
    return fits, detail, table.to(weights.dtype)


def t5_form(scores: torch.Tensor, product: torch.Tensor, probs: torch.Tensor | None) -> str | None:
    """How ``scores`` read as T5's attention, Q·Kᵀ (``product``) with no 1/√hs and a relative position bias: added on
    the scores' line (the scores are the product plus the bias), or on the softmax's (the scores are the product and
    the probabilities ``probs`` the softmax of them plus the bias, over the keys or over the queries: the softmax's
    axis is the probabilities' own claim, judged at their step); None where neither fits."""
    fits, detail = relative_bias(scores, product)
    if fits:
        return None if linear_in_offset((scores - product)[:1]) else f"the bias on the scores' line: {detail}"
    finite = torch.isfinite(scores)
    if probs is None or scores.shape != product.shape or not close(scores[finite], product[finite], "")[0]:
        return None
    for axis, over in ((-1, ""), (-2, " (a softmax over the queries: the softmax's axis is its own claim)")):
        fitted = relative_bias_fit(probs.transpose(axis, -1), scores.transpose(axis, -1))
        if fitted is not None and fitted[0] and not linear_in_offset(fitted[2]):
            return f"the bias added at the softmax{over}: {fitted[1]}"
    return None


def linear_in_offset(bias: torch.Tensor) -> bool:
    """Whether a relative bias (…, Lq, Lk) is linear in the key's offset from the query on each side of the query
    (ALiBi's slopes, symmetric or key-only: its second differences along the keys are zero but at the query's own
    key). ALiBi's models scale their scores by 1/√hs, so an unscaled product beside such a bias is no T5 attention,
    whose bias is a learned table of buckets."""
    if bias.shape[-1] < 3:
        return True  # too few keys to tell a table from a line: not read as T5's
    second = bias[..., 2:] - 2 * bias[..., 1:-1] + bias[..., :-2]  # centred on keys 1 … Lk − 2
    away = torch.arange(1, bias.shape[-1] - 1)[None, :] != torch.arange(bias.shape[-2])[:, None]  # off the kink
    return float(second[..., away].abs().max()) <= 1e-4 * max(1.0, float(bias.abs().max()))


def bias_inside_softmax(weights: torch.Tensor, logits: torch.Tensor, scores: torch.Tensor,
                        unmasked: bool) -> tuple[bool, str] | None:
    """The probabilities ``weights`` as the softmax of the scores plus a relative position bias added inside the
    softmax: one bias every input shares (``shared_bias_fit``, where the step has no mask of its own: ``unmasked``,
    ``logits`` the scores as the softmax read them), else one value per head and key − query offset with the entries
    given no weight masked (``relative_bias_fit`` of the ``scores`` step); None where neither fits."""
    if unmasked and (shared := shared_bias_fit(weights, logits)) is not None:
        return shared
    fitted = relative_bias_fit(weights, scores)
    if fitted is None or not fitted[0]:
        return None
    return True, f"the weights are the softmax of the scores plus a relative position bias (T5's) ({fitted[1]})"
