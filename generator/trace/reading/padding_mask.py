"""A padding mask over positions where the catalogue has a (T, T) attention mask (issue 40, round nineteen's Fastformer:
``attention_mask = ((1.0 - attention_mask) * -10000.0).unsqueeze(2)``, shape (B, T, 1), and the HuggingFace-style
(B, 1, T) key mask): one flag per position, broadcast over the queries. Its shape reads as no layout of the catalogue's
mask, so its checks cannot run; read instead as what it is, additive (0 keep, a large negative value drop) or boolean
(which value keeps is not read: no captured tensor tells), and held to the property no correct padding mask breaks: no
batch item's positions all blocked, which leaves its queries no key to see. The causal rule, if the model has one, is
applied elsewhere (the masked scores, the probabilities, or a causal pooling)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from transformer_trace.checks import FAILED, PASSED, CheckResult
from transformer_trace.checks.base import MASK_FILL
from transformer_trace.checks.evidence import PROPERTY, Evidence

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.trace.reading.pages import SnapshotReading

NO_ITEM_BLOCKED_WHOLE = "no query may block every key"


def padding_flags(mask: torch.Tensor) -> torch.Tensor | None:
    """A (B, T, 1), (B, 1, T) or (B, 1, 1, T) mask's flags as (B, T); None for any other shape."""
    if mask.dim() not in (3, 4) or any(n != 1 for n in mask.shape[1:-2]):
        return None
    rows, cols = mask.shape[-2:]
    if (rows == 1) == (cols == 1):  # a (T, T) mask, or one flag: not a padding mask over positions
        return None
    return mask.reshape(mask.shape[0], -1)


def padding_mask_read(page: SnapshotReading) -> CheckResult | None:
    """The mask step (a page whose check declares ``TraceUse.mask_step``) read as a padding mask over positions, where
    its shape is one; else None (the shape stays unread)."""
    if not any(check.TRACE.mask_step for check in page.snap.checks):
        return None
    mask = page.main.shown.tensor
    if not isinstance(mask, torch.Tensor) or (flags := padding_flags(mask.detach().cpu())) is None:
        return None
    name, shape = f"your {page.main.variable or 'mask'} ({page.label})", tuple(mask.shape)
    values = set(flags.unique().tolist())
    if flags.dtype == torch.bool or values <= {0.0, 1.0}:
        return CheckResult(name="is a padding mask over the positions (boolean)", passed=True, status=PASSED,
                           detail=f"{name}, shape {shape}, holds one flag per position, broadcast over the queries: "
                           "a padding mask; which value keeps a position is not read (no captured tensor tells), so "
                           "whether an item's positions are all blocked is not tested")
    blocked = flags <= -MASK_FILL
    if not flags.is_floating_point() or not bool((blocked | (flags == 0)).all()):
        return None  # values that are neither 0 nor a masking value: no padding mask this reading knows
    value = f"{float(flags[blocked].max()):g}" if bool(blocked.any()) else "a large negative value"
    how = f"additive, 0 = keep, {value} = drop"
    whole = blocked.all(-1)
    if bool(whole.any()):
        items = ", ".join(str(int(i)) for i in whole.nonzero().flatten())
        message = (f"{name}, read as a padding mask over the positions ({how}; shape {shape}), blocks every one of "
                   f"the {flags.shape[-1]} positions of batch item(s) {items}: no query of theirs can see any key "
                   "(a padding mask blocks only the padded positions; is it inverted?)")
        return CheckResult(name="is a padding mask over the positions", passed=False, status=FAILED, detail=message,
                           evidence=Evidence(PROPERTY, NO_ITEM_BLOCKED_WHOLE, message))
    kept = ", ".join(str(int(n)) for n in (~blocked).sum(-1))
    return CheckResult(name="is a padding mask over the positions", passed=True, status=PASSED,
                       detail=f"{name}, shape {shape}: one value per position broadcast over the queries, {how}; "
                       f"positions kept per batch item: {kept} of {flags.shape[-1]}; every item keeps some. It has no "
                       "causal part: the causal rule, if any, is applied elsewhere")
