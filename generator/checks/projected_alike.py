"""K or V holding, value for value, what an earlier of q, k and v holds: the later one projected by the earlier one's
Linear (`k = self.w_q(z)`, a copy-paste slip), or computed from its heads. Two projections of one input never agree
value for value, so correct code never fits; the later of the two is the one named, the catalogue's order q, k, v."""

from __future__ import annotations

from typing import Any

import torch

from transformer_trace.checks.base import close
from transformer_trace.checks.evidence import Fit
from transformer_trace.sources import Ref, TensorSource


def equal_to_earlier_part(check: Any, s: TensorSource) -> tuple[str, str] | None:
    """The earlier of q, k and v (in that order) that the step (K or V) equals value for value where both were
    captured, with the comparison's detail; None where none does. Two projections of one input never agree value for
    value, so the later of the two was projected as the earlier one was (its Linear called twice: `k = self.w_q(z)`)."""
    prefix, _, own = s.name(check.out).rpartition(".")
    got = s.t(check.out)
    if own not in ("k", "v") or float(got.abs().max()) == 0.0:
        return None
    for letter in "qkv"[:"qkv".index(own)]:
        other = Ref(f"{prefix}.{letter}")
        if s.has(other) and s.t(other).shape == got.shape:
            same, detail = close(got, s.t(other), f"vs {s.name(other)}")
            if same:
                return s.name(other), detail
    return None


def projected_as_another(check: Any, s: TensorSource) -> Fit | None:
    found = equal_to_earlier_part(check, s)
    if found is None:
        return None
    own = s.name(check.out).rpartition(".")[2].upper()
    return Fit(True, f"your {s.name(check.out)} equals {found[0]} value for value: the {own} heads were computed "
                     f"with the projection (or from the heads) of {found[0]}, where the {own} projection belongs "
                     f"({found[1]})")


def kv_part(fused: torch.Tensor, got: torch.Tensor, part: int) -> tuple[torch.Tensor, bool, str] | None:
    """Part ``part`` (1 k, 2 v) of a Linear making k and v side by side without q (PVT's ``kv`` of the reduced
    sequence), split into ``got``'s heads, where ``got`` (B, h, N, hs) is that part value for value: (it, True, the
    comparison); else None."""
    B, N, width = fused.shape
    if part < 1 or width != 2 * got.shape[1] * got.shape[-1]:
        return None
    kv = fused[..., (part - 1) * width // 2:part * width // 2].reshape(B, N, got.shape[1], -1).transpose(1, 2)
    passed, detail = close(got, kv, f"recomputed {'qkv'[part]}: its part of k and v fused, {got.shape[1]} heads")
    return (kv, True, detail) if passed else None
