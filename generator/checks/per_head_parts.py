"""q, k and v side by side within each head, (B, h, N, 3·hs) as one fused projection split into heads before its parts
(`qkv.reshape(B, N, h, -1).transpose(1, 2)`, then `q, k, v = qkv.chunk(3, dim=-1)`): each part is the slice of every
head's 3·hs features that is its own. Split over the heads axis instead (`chunk(3, dim=1)`), each part holds a third of
the heads, every one with its q, k and v together: the bug form ``PARTS_OVER_HEADS``."""

from __future__ import annotations

from typing import Any

import torch

from transformer_trace.checks.base import close
from transformer_trace.checks.evidence import Fit
from transformer_trace.sources import TensorSource

PARTS_OVER_HEADS = "q, k and v split over the heads axis"


def per_head_part(read: torch.Tensor, got: torch.Tensor, part: int) -> torch.Tensor | None:
    """Part ``part`` (0 q, 1 k, 2 v) of ``read``, a projection laid out (B, h', N, 3·hs') per head, where ``got``
    (the step, (B, h, N, hs)) holds as many values as one part but the heads the step shows are not the line's (a
    step split another way binds its own h and hs): each head's slice ``part`` of its 3·hs' features; None where
    ``read`` is not so laid out."""
    B, _, N, _ = got.shape
    if read.dim() != 4 or read.numel() != 3 * got.numel() or (read.shape[0], read.shape[2]) != (B, N) \
            or read.shape[-1] % 3:
        return None
    width = read.shape[-1] // 3
    return read[..., part * width:(part + 1) * width]


def heads_merged(heads: torch.Tensor) -> torch.Tensor:
    """(B, h, N, hs) as (B, N, h·hs): what two splits into different heads are compared as."""
    return heads.transpose(1, 2).flatten(-2)


def parts_over_heads(check: Any, s: TensorSource) -> Fit | None:
    """The step is the third ``part`` of the per-head projection the line read, taken over its heads axis: that
    projection's heads ``part·h'/3`` to ``(part+1)·h'/3 − 1``, each with its q, k and v side by side."""
    got, read = s.t(check.out), s.t(check.parts[0]) if len(check.parts) == 1 else None
    if read is None or per_head_part(read, got, check.part) is None or read.shape[1] % 3:
        return None
    chunk = read.chunk(3, dim=1)[check.part]
    if chunk.shape != got.shape:
        return Fit(False, f"the line's projection split over its heads axis is {tuple(chunk.shape)}, not the "
                          f"step's {tuple(got.shape)}")
    fits, detail = close(got, chunk, f"vs {s.name(check.parts[0])}.chunk(3, dim=1)[{check.part}]")
    third, width = read.shape[1] // 3, read.shape[-1] // 3
    heads = (f"head {check.part}" if third == 1 else
             f"heads {check.part * third} to {(check.part + 1) * third - 1}")
    return Fit(fits, f"q, k and v were split over the heads axis: your {s.name(check.out)} is {heads} of "
                     f"{s.name(check.parts[0])} (B, {read.shape[1]}, N, 3·{width}), with q, k and v side by side, "
                     f"where the {'QKV'[check.part]} part of every head belongs, its features {check.part * width} to "
                     f"{(check.part + 1) * width - 1} ({detail})" if fits else detail)
