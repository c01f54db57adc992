"""Heads interleaved in a projection's channels: `rearrange(q, 'b t (h n) -> b n t h', n=heads)` (shreydan's
ScratchFormers ViT) gives head j the channels j, j + h, j + 2h, … of the projection, not the block j·hs … (j + 1)·hs − 1
that `view(B, N, h, hs)` gives it. Each head still holds hs channels of every position: a fixed permutation of the
projection's outputs, which the projection's weights absorb (a model so written trains as the usual one does), so it is
a correct form of the head split, read where the usual split does not fit and it does. So are keys kept transposed,
(B, h, hs, N) (jaketae's ALiBi, GPT-2's TF code), which a trace reads as (B, h, N, hs) where N = hs."""

from __future__ import annotations

import torch

from transformer_trace.checks.base import close


def head_split(got: torch.Tensor, whole: torch.Tensor, heads: int, size: int) -> tuple[torch.Tensor, str]:
    """The projection ``whole`` (B, N, h·hs) split into ``heads`` heads of ``size`` as ``got`` (B, h, N, hs) was, and
    how: the usual split, or, where only that fits, kept transposed (the positions last) or the heads interleaved."""
    B, N = whole.shape[:2]
    usual = whole.reshape(B, N, heads, size).transpose(1, 2)
    how = f"(B, N, C) split into {heads} heads of {size}"
    if heads < 2 or size < 2 or close(got, usual, "")[0]:
        return usual, how
    if N == size and close(got, usual.transpose(-2, -1), "")[0]:  # (B, h, hs, N) reads as (B, h, N, hs) when N = hs
        return usual.transpose(-2, -1), (f"{how}, kept transposed (B, h, hs, N): the positions last, as keys "
                                         "`permute(0, 2, 3, 1)` keeps them for Q·K (GPT-2's form)")
    interleaved = whole.reshape(B, N, size, heads).permute(0, 3, 1, 2)
    if close(got, interleaved, "")[0]:
        return interleaved, (f"{how}, interleaved: head j holds channels j, j + {heads}, j + {2 * heads}, … (as "
                             f"`'b t (hs h) -> b h t hs'` splits them)")
    return usual, how
