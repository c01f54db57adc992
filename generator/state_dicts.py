"""Checks shared by every report that loads a user's state dict (--weights PATH)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import torch

from transformer_trace.errors import UserError


def refuse_unusable_values(path: Path, state: Mapping[str, torch.Tensor], keys: Iterable[str], model: str) -> None:
    """UserError naming the first key whose tensor a model cannot compute with: a meta tensor (shape only), integer
    values, or NaN/infinity. Checked while loading, not when pages and figures would fail on them later."""
    for key in keys:
        tensor = state[key]
        if tensor.is_meta:
            raise UserError(f"{path} holds no values for key {key!r} (a meta tensor: shape only); save the state dict "
                            "of a real model")
        if not tensor.is_floating_point():
            raise UserError(f"{path}: key {key!r} holds {tensor.dtype} values; a {model}'s weights are floating point")
        if not torch.isfinite(tensor).all():
            bad = int((~torch.isfinite(tensor)).sum())
            raise UserError(f"{path}: key {key!r} holds {bad} non-finite values (NaN or infinity); the weights are "
                            "corrupt")
