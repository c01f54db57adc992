"""Queries and keys normalised per head after the split (QK normalisation: ViT-22B, OLMo 2, Qwen 3 and students'
parallel blocks write ``q = self.ln_q(q.view(B, T, h, hs).transpose(1, 2))``): a correct form of the split-heads
steps, the family of a LayerNorm or an RMSNorm over the head size with one gain (and bias) per channel, shared by the
heads, fitted from the captured values, the tensors carrying no weights. The scores downstream read the normalised
queries and keys as captured, so nothing else changes."""

from __future__ import annotations

import torch

from transformer_trace.checks.base import UnfittableWeights
from transformer_trace.checks.normalisation import fitted_layer_norm


def normed_heads(got: torch.Tensor, heads: torch.Tensor, what: str) -> tuple[bool, str] | None:
    """(True, detail) where ``got`` is a LayerNorm or an RMSNorm over the last axis (the head size) of ``heads`` (the
    projection split into heads, as the step's check reads it), its gain and bias fitted per channel; None where no
    member fits, or where too few rows are captured to fit one (a gain and a bias per channel then fit anything)."""
    if got.shape != heads.shape or got.dim() < 2 or got.shape[-1] < 2:
        return None
    rows = got.reshape(-1, got.shape[-1]).shape[0]
    if rows < 2 * got.shape[-1]:  # too few rows per channel for the fitted gain and bias to be evidence
        return None
    try:
        _, passed, detail = fitted_layer_norm(got, heads, what)
    except UnfittableWeights:
        return None
    return (True, f"{detail}: normalised over the head size after the split (QK normalisation)") if passed else None
