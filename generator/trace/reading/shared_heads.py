"""A Linear shared by every head, called on the stream already split into heads (issue 40, round twelve's
ADulian/Vision_Transformer: ``queries = self.linear_queries(x.reshape(B, N, h, hs))``, an ``nn.Linear(hs, hs)``): the
same computation as one Linear on the merged heads, (B, N, h·hs), whose weight holds the shared one once per head on
its diagonal (and its bias once per head). Read so, the call's input is the stream it split (a LayerNorm's output no
step shows, for a q, k or v step's check) and its module the projection of the catalogue's form, so the checks of a
per-head projection read it unchanged."""

from __future__ import annotations

import dataclasses

import torch

from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall


def heads_merged(call: ModuleCall) -> ModuleCall:
    """``call`` read on the merged heads where it is a Linear given a (B, N, h, i) tensor (h > 1 heads) and giving
    (B, N, h, o): its input (B, N, h·i), its output (B, N, h·o), its weight block-diagonal (h·o, h·i); else the call
    as it is."""
    given = call.inputs[0] if call.inputs else None
    output = call.outputs[0] if call.outputs else None
    weight, bias = call.params.get("weight"), call.params.get("bias")
    if (call.kind != ModuleKind.LINEAR or not isinstance(given, torch.Tensor) or not isinstance(output, torch.Tensor)
            or weight is None or weight.dim() != 2 or given.dim() != 4 or output.dim() != 4 or given.shape[2] < 2
            or given.shape[-1] != weight.shape[1] or output.shape[:3] != given.shape[:3]
            or output.shape[-1] != weight.shape[0]):
        return call
    B, N, heads = given.shape[:3]
    params = {**call.params, "weight": torch.block_diag(*[weight] * heads),
              "bias": bias.repeat(heads) if bias is not None else None}
    return dataclasses.replace(call, inputs=[given.reshape(B, N, -1), *call.inputs[1:]],
                               outputs=[output.reshape(B, N, -1), *call.outputs[1:]], params=params)
