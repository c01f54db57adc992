"""The positions added to a tensor no snapshot shows: a ViT without a class token whose patch embeddings are normalised
inside its patcher, on an unmarked line (AIMv2's ``PatchEmbed`` ends with an RMSNorm), adds its table to that norm's
output (``tokens = tokens + pos_embed[:, :N]``). The catalogue's input of the step (the tokens with the class token,
S06) is absent, and the patch embeddings the check would read instead (S04) are not what the table was added to: the
step's input is the one local of the step's shape the line read (copied as it ran: ``TraceUse.reads_locals``), and
the table, where the line read it as a local too (one row per position at least, one item) or by attribute, is that."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch

from transformer_trace.checks import Check
from transformer_trace.checks.values import PlusParameter
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.binding import Bound, Given
from transformer_trace.trace.reading.capture import ModuleCall


def added_to_read(check: Check, calls: Sequence[ModuleCall], source: TensorDict) -> Bound | None:
    """``check`` (the positions' ``PlusParameter``) with its input the one local tensor of the step's shape the line
    read, where no snapshot shows the input (and, where the line read the table as a local of one item and at least
    the step's rows, that table); None where the input is captured, or no single local of the step's shape was read."""
    if not isinstance(check, PlusParameter) or source.has(check.x) or not source.has(check.out):
        return None
    step = source.t(check.out)
    read = [(c.module, local) for c in calls if c.kind == ModuleKind.LOCAL and len(c.outputs) == 1
            and (local := c.outputs[0]) is not None and local.is_floating_point()]
    inputs = [(name, tensor) for name, tensor in read if tuple(tensor.shape) == tuple(step.shape)]
    if len(inputs) != 1:
        return None  # none, or several (a batch of one: the table has the step's shape too): which is which is unknown
    name, tensor = inputs[0]
    # the table read by attribute (``self.pos_embed``)
    attributes = [(c.module, weight) for c in calls if c.kind == ModuleKind.READ
                  and (weight := c.params.get("weight")) is not None]
    tables = [(other, table) for other, table in read + attributes if other != name and _a_table_for(table, step)]
    x = Ref(f"{source.name(check.x)}@{name}")
    params = {source.name(check.parameter): tables[0][1]} if len(tables) == 1 else {}
    given = Given(source, {**source.tensors, x.template: tensor}, params=params)
    table = f", and `{tables[0][0]}` the table it added" if params else ""
    return Bound(replace(check, x=x, patches=None), given, None, f"its input `{name}` as the line read it{table}",
                 said=((x.template, f"`{name}`, the tensor your line added the positions to"),))


def _a_table_for(table: torch.Tensor, step: torch.Tensor) -> bool:
    """Whether ``table`` can be a position table added to ``step``: one item, the step's width, at least its rows."""
    return (table.dim() == step.dim() >= 2 and table.shape[0] == 1 and table.shape[-1] == step.shape[-1]
            and table.shape[-2] >= step.shape[-2] and tuple(table.shape[1:-2]) == tuple(step.shape[1:-2]))
