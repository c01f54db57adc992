"""Checks that only a traced module call makes possible: a patch embedding computed by a Conv2d, recomputed from the
convolution's own weights on the image it was called with; a head split checked against the projection the marked
line read (generator/trace/weights.py binds them)."""

from __future__ import annotations

from dataclasses import dataclass

import torch.nn.functional as F

from transformer_trace.checks.base import Check, THIS, close
from transformer_trace.sources import ModuleRef, NotCheckable, Ref, TensorSource


@dataclass(frozen=True, kw_only=True)
class ConvPatches(Check):
    """``out`` (B, N, C) is the Conv2d ``module`` applied to the image ``x`` (B, 3, H, W), its (B, C, H/p, W/p) output
    read position by position (row-major): a patch embedding, the Linear of each flattened patch."""

    out: Ref = THIS
    x: Ref
    module: ModuleRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        conv = s.module(self.module)
        weight = conv.weight.detach().double().cpu()
        bias = conv.bias.detach().double().cpu() if conv.bias is not None else None
        maps = F.conv2d(s.t(self.x), weight, bias, conv.stride, conv.padding, conv.dilation, conv.groups)
        expected = maps.flatten(2).transpose(1, 2)  # (B, C, h, w) -> (B, h·w, C)
        got = s.t(self.out)
        passed, detail = close(got.reshape(expected.shape) if got.numel() == expected.numel() else got, expected,
                               f"recomputed the {tuple(weight.shape[-2:])} convolution with {s.name(self.module)}'s "
                               "weights on the image it was called with, positions row by row")
        return "equals the patch embedding (the convolution of each patch)", passed, detail


@dataclass(frozen=True, kw_only=True)
class HeadsOfRead(Check):
    """``out`` (B, h, N, hs) is part ``part`` (0 q, 1 k, 2 v) of the projection the marked line read (``parts``: one
    tensor, fused or not, or the three side by side), split into heads: the head split checked where the projection's
    weights were not on the marked line."""

    out: Ref = THIS
    parts: tuple[Ref, ...]
    part: int

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        got = s.t(self.out)
        B, H, N, hs = got.shape
        read = [s.t(ref) for ref in self.parts]
        if len(read) == 3 and all(r.numel() == got.numel() for r in read):
            whole = read[self.part]
        elif len(read) == 1 and read[0].numel() == 3 * got.numel() and read[0].shape[0] == 3:
            whole = read[0][self.part]  # q, k and v stacked first: (3, B, h, N, hs)
        elif len(read) == 1 and read[0].numel() == 3 * got.numel() and read[0].shape[-1] == 3 * H * hs:
            whole = read[0][..., self.part * H * hs:(self.part + 1) * H * hs]  # fused side by side: (B, N, 3C)
        elif len(read) == 1 and read[0].numel() == got.numel():
            whole = read[0]
        else:
            raise NotCheckable(s.name(self.parts[0]), f"the shapes the line read, {[tuple(r.shape) for r in read]}, "
                               f"are not a projection of {B}×{N} positions")
        if whole.shape == got.shape:
            expected, how = whole, "as read"
        elif whole.shape == (B, N, H * hs):
            expected, how = whole.reshape(B, N, H, hs).transpose(1, 2), f"(B, N, C) split into {H} heads of {hs}"
        elif whole.shape == (B, N, H, hs):
            expected, how = whole.transpose(1, 2), "(B, N, h, hs) with its heads axis moved forward"
        else:
            raise NotCheckable(s.name(self.parts[0]), f"its shape {tuple(whole.shape)} is not {B}×{N} positions")
        letter = "qkv"[self.part]
        passed, detail = close(got, expected, f"the {letter} projection the line read, {how}")
        return (f"is the {letter.upper()} projection the line read, split into heads (its weights were not on the "
                "marked line)"), passed, detail
