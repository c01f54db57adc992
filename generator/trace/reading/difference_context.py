"""A differential attention's context (checks/differential.py ``DifferenceContext``): the context's line multiplies
the values by a tensor it read that is not the probabilities' step (``O = torch.matmul(attention, V)``, ``attention =
attention1 − λ·attention2`` on an earlier line, the probabilities' step marked on ``attention1``): where the step is
that tensor times the captured values, the catalogue's probs·V check is read as the difference's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from transformer_trace.checks import close
from transformer_trace.checks.context_heads import ContextHeads
from transformer_trace.checks.differential import DifferenceContext
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.weights import Bound, Given


def difference_bound(check: Any, calls: Sequence[ModuleCall], source: TensorDict,
                     main: torch.Tensor | None) -> Bound | None:
    """``check`` (the context's probs·V) read as ``DifferenceContext`` where the line read one tensor of the
    probabilities' shape with negative weights (a difference of maps: a softmax, dropped out or not, has none), whose
    product with the captured values is the step; None otherwise."""
    if not isinstance(check, ContextHeads) or main is None \
            or not all(source.has(ref) for ref in (check.probs, check.v_heads)):
        return None
    probs, v = source.t(check.probs), source.t(check.v_heads)
    read = [(c.module, c.outputs[0]) for c in calls if c.kind == ModuleKind.LOCAL and len(c.outputs) == 1
            and isinstance(c.outputs[0], torch.Tensor) and c.outputs[0].shape == probs.shape]
    if len(read) != 1 or v.shape[:-1] != main.shape[:-1] or float(read[0][1].min()) >= -1e-6:
        return None
    name, weights = read[0]
    if not close(main.double(), weights.double() @ v, "")[0]:
        return None
    record = f"{name}@line.read"
    given = Given(source, {**source.tensors, record: weights.detach().double()})
    bound = DifferenceContext(out=check.out, weights=Ref(record), first=check.probs, v_heads=check.v_heads)
    return Bound(bound, given, None, f"`{name}`, the weights the line read (the maps' difference)")
