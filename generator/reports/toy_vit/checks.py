"""Checks specific to the toy ViT report, listed in ``CHECKS`` (the report merges them with
transformer_trace.checks.CHECKS)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from transformer_trace.checks import THIS, Check, close, linear
from transformer_trace.registry import Registry
from transformer_trace.sources import InputRef, ModuleRef, Ref, TensorSource


@dataclass(frozen=True, kw_only=True)
class IsImage(Check):
    """``out`` (1, 1, H, W) holds the run's input ``pixels`` (rows of intensities), each in [0, 1]."""

    out: Ref = THIS
    pixels: InputRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        got = s.t(self.out)
        expected = torch.tensor(s.input(self.pixels), dtype=torch.float64).view_as(got)  # rows -> (B, Ch, H, W)
        passed, detail = close(got, expected, "vs the pixel rows the run was fed")
        inside = bool(((got >= 0) & (got <= 1)).all())
        return (
            "is the input image, every pixel in [0, 1]",
            passed and inside,
            detail + f"; every pixel in [0, 1]: {inside}",
        )


@dataclass(frozen=True, kw_only=True)
class PatchesTile(Check):
    """Tensors only: the patches ``out`` (B, N, Ch, P, P) put back on the grid, row by row, are the ``image``."""

    out: Ref = THIS
    image: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        p = s.t(self.out)
        B, N, Ch, P, _ = p.shape
        img = s.t(self.image)
        side = img.shape[-1] // P
        # -> (B, Ch, H, W)
        rebuilt = p.view(B, side, side, Ch, P, P).permute(0, 3, 1, 4, 2, 5).reshape(B, Ch, side * P, side * P)
        passed, detail = close(rebuilt, img, f"{N} patches of {P}×{P} put back on a {side}×{side} grid, row by row, vs "
                                             "the image")
        return "the patches tile the image, row by row", passed, detail


@dataclass(frozen=True, kw_only=True)
class ReadRowByRow(Check):
    """Tensors only: ``out`` (B, N, Ch·P·P) is each patch of ``source`` read left to right, top to bottom."""

    out: Ref = THIS
    source: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        src = s.t(self.source)  # (B, N, Ch, P, P)
        B, N, Ch, P, _ = src.shape
        # pixel by pixel
        expected = torch.stack([src[:, :, c, y, x] for c in range(Ch) for y in range(P) for x in range(P)], dim=-1)
        passed, detail = close(s.t(self.out), expected, f"each patch's {Ch * P * P} pixels picked one by one, left to "
                                                        "right, top to bottom")
        return "each patch read left to right, top to bottom", passed, detail


@dataclass(frozen=True, kw_only=True)
class ProjectedHeads(Check):
    """``out`` (B, h, N1, hs) is the Linear ``module`` applied to ``x``, split into heads."""

    out: Ref = THIS
    x: Ref
    module: ModuleRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        got = s.t(self.out)
        B, H, N1, hs = got.shape
        # (B, N1, C) -> (B, h, N1, hs)
        expected = linear(s, self.module, s.t(self.x)).view(B, N1, H, hs).transpose(1, 2)
        name = s.name(self.module)
        passed, detail = close(got, expected, f"recomputed x·Wᵀ + b with {name}'s weights, split into {H} "
                                              f"head{'s' if H > 1 else ''}")
        return f"equals {name} applied to its input", passed, detail


@dataclass(frozen=True, kw_only=True)
class DotProducts(Check):
    """Tensors only: ``out`` is Q·Kᵀ per head, not yet scaled."""

    out: Ref = THIS
    q_heads: Ref
    k_heads: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        q, k = s.t(self.q_heads), s.t(self.k_heads)
        passed, detail = close(s.t(self.out), q @ k.transpose(-2, -1), "recomputed every query·key dot product")
        return "equals Q·Kᵀ", passed, detail


@dataclass(frozen=True, kw_only=True)
class ReluOf(Check):
    """Tensors only: ``out`` is ReLU of ``x``: negatives become 0, the rest pass unchanged."""

    out: Ref = THIS
    x: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        x = s.t(self.x)
        passed, detail = close(s.t(self.out), F.relu(x), "recomputed max(0, x)")
        return (
            "equals ReLU of its input",
            passed,
            detail + f"; {int((x < 0).sum())} of {x.numel()} inputs were negative",
        )


CHECKS: Registry[type[Check]] = Registry("check", [(cls.key(), cls) for cls in (
    IsImage, PatchesTile, ReadRowByRow, ProjectedHeads, DotProducts, ReluOf,
)])
