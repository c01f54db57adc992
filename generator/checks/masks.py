"""Attention masks: how a mask says what a query may see (additive, or boolean either way round), and the causal mask
check, which tells padding combined with the causal rule from a mask that lets a position see the future."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from transformer_trace.checks.base import MASK_FILL, Check, THIS, TraceUse, close
from transformer_trace.checks.evidence import Fit, Property
from transformer_trace.checks.retention import decay_allows, decayed_scores
from transformer_trace.sources import Ref, TensorSource


MASKING_OFFSET = -1e3  # a score moved this far down gets weight exp(−1000) = 0 in every float type: masked


def mask_allows(mask: torch.Tensor) -> tuple[torch.Tensor, str]:
    """Where a mask lets a query see a key (True), and how it says so: additive (0 allowed, −inf or ≤ −1e9 blocked) or
    boolean (True allowed, or True blocked: the diagonal, allowed but at padded positions, tells which)."""
    if mask.dtype == torch.bool or (set(mask.unique().tolist()) <= {0.0, 1.0} and bool(mask.bool().any())):
        m = mask.bool()
        if float(m.diagonal(dim1=-2, dim2=-1).float().mean()) > 0.5:
            return m, "boolean, True = allowed"
        return ~m, "boolean, True = blocked"
    if (decay := decay_allows(mask)) is not None:  # retention's D: the scores times it, 0 where it blocks
        return decay
    blocked = mask <= -MASK_FILL  # exp(−1e4) is 0 in every float type: −inf, −1e9, −1e10, finfo(dtype).min all block
    values = mask[blocked].unique()
    value = "−inf" if not len(values) or bool(torch.isneginf(values).all()) else (
        f"{float(values.max()):g}" if len(values) == 1 else f"{float(values.min()):g} to {float(values.max()):g}")
    return ~blocked, f"additive, 0 = allowed, {value} = blocked"


def masked_as_written(got: torch.Tensor, scores: torch.Tensor, allowed: torch.Tensor,
                      mask: torch.Tensor | None = None) -> tuple[torch.Tensor, str]:
    """The masked scores as the script's form makes them, closest to ``got``: −inf where the mask blocks; the script's
    own finite masking value there (−1e9, −1e10, ``finfo(dtype).min``: read from ``got``'s blocked entries, one
    value); or an additive mask added to the scores; a decay mask multiplied in (retention.py). Returns the recomputed
    tensor and how it was masked."""
    blocked = (~allowed).expand_as(got)
    forms = [(scores.masked_fill(~allowed, float("-inf")), "−inf where the mask blocks")]
    if mask is not None and decay_allows(mask) is not None:
        forms = decayed_scores(got, scores, mask) + forms
    values = got[blocked].unique() if bool(blocked.any()) else got.new_empty(0)
    if len(values) == 1 and bool(torch.isfinite(values).all()) and float(values[0]) <= -MASK_FILL:
        forms.append((scores.masked_fill(~allowed, float(values[0])),
                      f"the finite masking value {float(values[0]):g} where the mask blocks (fitted; −inf elsewhere)"))
    if mask is not None and mask.is_floating_point() and mask.shape[-2:] == scores.shape[-2:]:
        forms.append((scores + mask.to(scores.dtype), "the additive mask added to the scores"))
    offsets = (got - scores)[blocked] if bool(blocked.any()) else got.new_empty(0)
    if len(offsets) and bool(torch.isfinite(offsets).all()) and float(offsets.max()) <= MASKING_OFFSET:
        value = float(offsets.median())  # a boolean mask added times a large negative number (`x += mask * -1e4`)
        forms.append((scores + value * blocked.to(scores.dtype),
                      f"the scores plus {value:g} where the mask blocks (the mask added times a masking value, "
                      "fitted)"))
    return next(((t, how) for t, how in forms if close(got, t, "")[0]), forms[0])


def masked_entries(got: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """The entries a mask changed the scores at, whatever its form: set to −inf or a masking value, moved by one (a
    score minus 10⁴ is masked although it may lie above −10⁴), or multiplied by 0 (a decay mask: retention.py)."""
    return (got <= -MASK_FILL) | ((got - scores) <= MASKING_OFFSET) | ((got == 0) & (scores != 0))


def memory_length(queries: int, keys: int) -> int:
    """How many key positions come before the queries' own: M = S − T where the keys run over a memory of earlier
    positions before the T queries (Transformer-XL's segment memory, a key/value cache read back), 0 otherwise."""
    return max(keys - queries, 0)


def future_entries(queries: int, keys: int) -> torch.Tensor:
    """The (T, S) entries the causal rule blocks: key j is later than query i where j > M + i, the queries being the
    last T of the S key positions (M = ``memory_length``; the plain upper triangle where S = T)."""
    return torch.triu(torch.ones(queries, keys, dtype=torch.bool), diagonal=1 + memory_length(queries, keys))


def aligned_to_keys_start(allowed: torch.Tensor, name: str) -> Fit | None:
    """The causal rule applied as if the queries were the first T of the S > T keys (``tril(0)`` over (T, S)): query
    i sees keys 0 … i, the memory's positions taken for its own, so it never sees its own key M + i; None where the
    keys are no longer than the queries (nothing to align)."""
    queries, keys = allowed.shape[-2:]
    if keys <= queries:
        return None
    start = torch.ones(queries, keys, dtype=torch.bool).tril()
    if not bool((allowed == start).all()):
        return Fit(False, "the allowed entries are not keys 0 … i for query i")
    M = memory_length(queries, keys)
    return Fit(True, f"the causal mask is aligned to the keys' start, not to the queries' own positions: your {name} "
               f"lets query i see keys 0 … i of the {keys} keys, but the queries are the last {queries} of them after "
               f"{M} earlier positions (a memory): query i is key {M} + i, so it never sees its own key nor the {M} "
               "before it")


def causal_reading(allowed: torch.Tensor) -> tuple[int, int, torch.Tensor, torch.Tensor]:
    """How a mask's allowed entries (…, T, S) stand to the causal rule: the future entries it leaves visible, the
    entries on or below the diagonal it blocks that padding does not explain, and the padding it combines with the
    rule (keys no query may see, queries that see no key: flags of (…, 1, S) and (…, T, 1)). With more keys than
    queries the diagonal is the queries' own key positions, the last T (``future_entries``)."""
    above = future_entries(allowed.shape[-2], allowed.shape[-1])
    keys, queries = (~allowed).all(-2, keepdim=True), (~allowed).all(-1, keepdim=True)
    padding = (keys | queries) & ~above
    return int(allowed[..., above].sum()), int((~allowed & ~above & ~padding).sum()), keys, queries


def sliding_window(allowed: torch.Tensor) -> int | None:
    """The window w of a sliding-window causal mask (Mistral's, Longformer's local attention): its allowed entries are
    exactly the keys from w before the query to the query itself, for every item and head, w shorter than the queries
    (else it is the plain causal mask); None where the mask is no such band."""
    queries, keys = allowed.shape[-2:]
    # M + i − j: how far back key j is from query i (its key position M + i, after a memory of M)
    distance = torch.arange(queries)[:, None] + memory_length(queries, keys) - torch.arange(keys)[None, :]
    seen = distance.expand_as(allowed)[allowed]
    if seen.numel() == 0 or int(seen.min()) != 0:
        return None
    window = int(seen.max())
    band = (distance >= 0) & (distance <= window)
    return window if window < queries - 1 and bool((allowed == band).all()) else None


def padding_said(keys: torch.Tensor, queries: torch.Tensor) -> str:
    """The padding a causal mask combines with the rule, per batch item; "" where it has none."""
    if not bool(keys.any() or queries.any()):
        return ""
    return (f"; besides, padding combined with the causal rule: {_per_item(keys)} key positions blocked for every "
            f"query, {_per_item(queries)} query positions that see no key (per batch item)")


def sees_nothing(check: Any, s: TensorSource) -> torch.Tensor | None:
    """The query rows a check's captured mask (``check.mask``) blocks whole: padded queries, whose weights are uniform
    over every key (all masked alike), the future ones too; None where no mask is captured."""
    if getattr(check, "mask", None) is None or not s.has(check.mask):
        return None
    allowed, _ = mask_allows(s.cpu(check.mask))
    return ~allowed.any(-1, keepdim=True)


def padding_fit(weights: torch.Tensor, logits: torch.Tensor) -> tuple[torch.Tensor, str] | None:
    """The softmax of ``logits`` under a padding mask the step does not show, read from the weights: the keys no query
    that sees a key gives any weight are blocked, and a query whose row is uniform over every key sees none (a mask of
    −1e9 over its whole row, as a padded query gets); None where no key is left out. The recomputed weights and how."""
    keys = weights.shape[-1]
    blind = (weights - 1.0 / keys).abs().amax(-1, keepdim=True) <= 1e-6  # uniform rows: queries that see no key
    unseen = ((weights == 0) | blind).all(-2, keepdim=True)  # keys no query attends to (the blind ones aside)
    if not bool(unseen.any()) or bool(unseen.all(-1).any()) or bool(blind.all()):
        return None
    recomputed = torch.softmax(logits.masked_fill(unseen, float("-inf")), dim=-1)
    recomputed = torch.where(blind, torch.full_like(recomputed, 1.0 / keys), recomputed)
    said = (f"recomputed softmax over the keys any query attends to ({int(unseen.sum())} key positions get no weight "
            "from any query: a padding mask recognised")
    if bool(blind.any()):
        said += f"; {int(blind.sum())} query rows see no key, uniform over every key: padded queries"
    return recomputed, said + ")"


def _per_item(blocked: torch.Tensor) -> str:
    """How many entries of a (B, 1, T, 1)-like flag tensor are set, per batch item, as "0, 2"."""
    return ", ".join(str(int(n)) for n in blocked.reshape(blocked.shape[0] if blocked.dim() > 2 else 1, -1).sum(-1))


def _sees_later(check: Any, s: TensorSource) -> str | None:
    mask = s.cpu(check.out)
    allowed, kind = mask_allows(mask)
    above = future_entries(mask.shape[-2], mask.shape[-1])
    seen = int(allowed[..., above].sum())
    return f"a position sees the next: your {kind} mask leaves {seen} future entries visible" if seen else None


@dataclass(frozen=True, kw_only=True)
class CausalMask(Check):
    """Tensors only: a causal mask allows exactly the keys on and before the query: additive (0 on and below the
    diagonal, −inf or ≤ −1e9 above) or boolean (True allowed, or True blocked)."""
    CLAIM = "lets each query see itself and the keys before it, no later one"
    TRACE = TraceUse(mask_step=True)

    PROPERTIES = (Property("no query attends to a later key", "the entries above the diagonal", _sees_later),)

    out: Ref = THIS

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        mask = s.cpu(self.out)
        allowed, kind = mask_allows(mask)
        above = future_entries(mask.shape[-2], mask.shape[-1])
        seen, hidden, keys, queries = causal_reading(allowed)  # padded keys and queries, whole: not causality
        window = sliding_window(allowed) if seen == 0 and hidden else None
        passed = seen == 0 and (hidden == 0 or window is not None)
        detail = (f"{kind} mask; {int(above.sum())} future entries blocked, {int((~above).sum())} on and below the "
                  f"diagonal allowed: {passed}") + padding_said(keys, queries)
        if window is not None:  # a sliding window: each query sees itself and the ``window`` keys before it
            return (f"allows each position itself and the {window} positions before it (a sliding-window causal "
                    "mask), never a later one"), passed, (f"{detail}; the {hidden} entries further back than {window} "
                                                          "positions blocked: a sliding window, its width fitted")
        if kind.startswith("additive"):  # a decay mask's allowed entries are its factors, not 0
            exact = bool((mask[allowed.expand_as(mask)] == 0).all()) if allowed.shape == mask.shape else True
            detail += f"; the allowed entries are exactly 0: {exact}"
            passed &= exact
        if seen:
            detail += f"; {seen} future entries stay visible"
        if hidden:
            detail += f"; {hidden} entries on or below the diagonal are blocked"
        return "allows each position itself and the positions before it, never a later one", passed, detail


def _weight_where_blocked(check: Any, s: TensorSource) -> str | None:
    """Weights on keys the captured mask (``check.mask``) blocks, for queries that see some key (a padded query that
    sees none is uniform over every key, by any form): the mask the model built was not applied where it blocks
    (applied to another batch item's rows, or not at all)."""
    if getattr(check, "mask", None) is None or not s.has(check.mask):
        return None
    weights = s.t(check.out)
    allowed, kind = mask_allows(s.cpu(check.mask))
    try:
        blocked = (~allowed & allowed.any(-1, keepdim=True)).expand_as(weights)
    except RuntimeError:  # a mask that does not broadcast over the weights: another check's matter
        return None
    leaked = weights.abs().masked_fill(~blocked, 0.0)
    if float(leaked.max()) <= LEAK_TOLERANCE:
        return None
    where = [int(i) for i in torch.unravel_index(leaked.argmax(), leaked.shape)]
    return (f"your {s.name(check.out)} gives {int((leaked > LEAK_TOLERANCE).sum())} weights to keys your {kind} mask "
            f"({s.name(check.mask)}) blocks, the largest {float(leaked.max()):.3g} (at index {tuple(where)}: batch "
            "item, head, query, key): the mask was not applied where it blocks")


LEAK_TOLERANCE = 1e-6  # a blocked key's weight: exp(−1e4) and below are 0 in every float type
MASK_HONOURED = Property("no weight on a key the mask blocks", "the weights where the captured mask blocks",
                         _weight_where_blocked)


def pattern_of_own(got: torch.Tensor, scores: torch.Tensor) -> tuple[torch.Tensor, str]:
    """Masked scores whose mask no line shows (the buffer sliced inside the ``masked_fill`` line): where they allow a
    query to see a key, read from the entries the step itself masked (``masked_entries``), and how it says so."""
    return ~masked_entries(got, scores), "read from the masked entries of the step itself (no mask marked)"


def future_left_visible(got: torch.Tensor, scores: torch.Tensor) -> int:
    """How many scores above the diagonal masked scores ``got`` leave as ``scores`` had them: a causal mask blocks
    them all."""
    allowed, _ = pattern_of_own(got, scores)
    return causal_reading(allowed)[0]


def causal_by_own_pattern(got: torch.Tensor, scores: torch.Tensor) -> tuple[bool, str]:
    """Whether masked scores no marked mask explains are a causal model's: ``scores`` where the step's own masked
    entries allow, masked exactly above the diagonal (padding combined with it, or a sliding window, besides), with
    the evidence in words."""
    allowed, how = pattern_of_own(got, scores)
    seen, hidden, keys, queries = causal_reading(allowed)
    window = sliding_window(allowed) if seen == 0 and hidden else None
    causal = seen == 0 and (hidden == 0 or window is not None)
    recomputed, written = masked_as_written(got, scores, allowed)
    passed, detail = close(got, recomputed, f"recomputed: the scores with {written}")
    band = f"; the entries further back than {window} positions masked too: a sliding window" if window else ""
    return passed and causal, (
        f"where it masks {how}: {int((~allowed).sum()):,} entries; every score above the diagonal masked: "
        f"{seen == 0} ({seen} left as they were){band}{padding_said(keys, queries)}; " + detail)
