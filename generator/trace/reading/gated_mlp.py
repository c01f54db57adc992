"""A gated MLP's hidden layer marked on the line that multiplies its two factors (``fuse = gate * up``, Gemma's
GeGLU): the GELU check of the MLP's hidden layer read as checks/gated.py ``GatedOfLinear``, its factors the two
tensors the line read (copied as it ran: ``TraceUse.reads_locals``), where their product is the step."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from transformer_trace.checks import close
from transformer_trace.checks.gated import GatedOfLinear
from transformer_trace.checks.activation import GeluOfLinear
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.weights import Bound, Given


def gated_bound(check: Any, calls: Sequence[ModuleCall], source: TensorDict, main: torch.Tensor | None,
                known: dict[str, Any] | None) -> Bound | None:
    """``check`` (the hidden layer's GELU) read as a gated MLP where its line read exactly two tensors of the step's
    shape whose product is the step; None otherwise."""
    if not isinstance(check, GeluOfLinear) or main is None:
        return None
    read = [(c.module, c.outputs[0]) for c in calls if c.kind == ModuleKind.LOCAL and len(c.outputs) == 1
            and c.outputs[0] is not None and c.outputs[0].shape == main.shape]
    if len(read) != 2 or not close(main, read[0][1] * read[1][1], "")[0]:
        return None
    names = [f"{name}@line.read" for name, _ in read]
    given = Given(source, {**source.tensors, **{name: tensor for name, (_, tensor) in zip(names, read)}},
                  modules=dict(known or {}))
    gated = GatedOfLinear(out=check.out, x=check.x, module=check.module, gate=Ref(names[0]), up=Ref(names[1]))
    return Bound(gated, given, None, f"`{read[0][0]}` and `{read[1][0]}`, the factors the line multiplied")
