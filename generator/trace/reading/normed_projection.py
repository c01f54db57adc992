"""A projection's Linear and a norm over the head size on one marked line (QK normalisation written where the queries
are projected: ``q = self.q_norm(self.q(x).view(B, T, h, hs).transpose(1, 2))``): the step is no call's output, the
norm's, so the Linear the line called is bound as the step's projection where the form fits: its output split into
the step's heads, normalised over the head size (the norm's gain and bias fitted, its call not needed: an nn.RMSNorm
is not recorded), is the step. The step's check then judges it with the Linear's own weights (checks/head_norm.py)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from transformer_trace.checks.head_norm import normed_heads
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall


def projection_normed_per_head(calls: Sequence[ModuleCall], main: torch.Tensor | None) -> ModuleCall | None:
    """The last Linear the line called whose output (B, N, h·hs), split into the step's heads ((B, h, N, hs) or
    (B, N, h, hs)), a norm over the head size turns into the step; None where none does."""
    if main is None or main.dim() != 4 or not main.is_floating_point():
        return None
    for call in reversed(calls):
        output = call.outputs[0] if call.kind == ModuleKind.LINEAR and call.outputs else None
        if output is None or output.dim() != 3 or output.numel() != main.numel():
            continue
        B, N, width = output.shape
        split = [output.reshape(B, N, main.shape[1], main.shape[3]).transpose(1, 2)
                 if main.shape[:3:2] == (B, N) else None,  # (B, h, N, hs)
                 output.reshape(main.shape) if main.shape[:2] == (B, N) else None]  # (B, N, h, hs)
        if any(heads is not None and normed_heads(main, heads, "") is not None for heads in split):
            return call
    return None
