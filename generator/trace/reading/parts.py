"""A step captured only in parts (attention written as loops over the items and the heads: one item's one head per
hit, the whole (B, h, N, N) never one tensor) is not compared as a whole, but a bug form that reads the step alone
(the softmax over the wrong axis: its columns sum to 1, its rows do not) is tried on every part: where it fits every
one, that is evidence enough for a red verdict, the same as on the whole. Properties are not tried so: a part whose
rows do not sum to 1 may be a dropout's, which only the whole step's own check can read back."""

from __future__ import annotations

from typing import Any

import torch

from transformer_trace.checks import CheckResult
from transformer_trace.checks.base import FAILED
from transformer_trace.checks.evidence import BUG_FORM, Evidence
from transformer_trace.sources import Ref, TensorDict


def evidence_in_parts(check: Any, parts: tuple[torch.Tensor | None, ...], places: dict[str, str]) -> CheckResult | None:
    """The failed result of ``check`` where one of its bug forms fits each of ``parts`` (the hits of a step captured
    one (N, N) or (N, hs) slice at a time), read as a step of one item and one head; None where none fits them all."""
    out = getattr(check, "out", None)
    tensors = [part for part in parts if isinstance(part, torch.Tensor) and part.is_floating_point()]
    if not isinstance(out, Ref) or not tensors or len(tensors) != len(parts):
        return None
    name = TensorDict({}, places=places).name(out)
    for form in type(check).BUG_FORMS:
        fits = [form.tried(check, TensorDict({name: part.double().reshape(1, 1, *part.shape[-2:])}, places=places))
                for part in tensors]
        if all(fit is not None and fit.fits for fit in fits):
            first = fits[0]
            assert first is not None  # (all fit)
            message = (f"{first.message}, on each of the {len(tensors)} hits of the line (one item's one head each: "
                       "the step is never one tensor)")
            return CheckResult(name=check.claim_in_words(), passed=False, status=FAILED, detail=message,
                               evidence=Evidence(BUG_FORM, form.name, message))
    return None
