"""Checks that only a traced module call makes possible: a patch embedding computed by a Conv2d, recomputed from the
convolution's own weights on the image it was called with (generator/trace/weights.py binds them)."""

from __future__ import annotations

from dataclasses import dataclass

import torch.nn.functional as F

from transformer_trace.checks.base import Check, THIS, close
from transformer_trace.sources import ModuleRef, Ref, TensorSource


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
