"""A Linear step whose marked line called LayerNorms and a Linear in a chain on the step's own input as captured
(``out = self.patch_embed(out)`` with ``patch_embed = nn.Sequential(LayerNorm, Linear, LayerNorm)``: a patch embedding
normalised before and after its Linear, the patches cut on an earlier line): the chain recomputed from the modules'
own weights (checks/calls.py ``LayersOfInput``)."""

from __future__ import annotations

from collections.abc import Sequence

from transformer_trace.checks import Check
from transformer_trace.checks.calls import LayersOfInput
from transformer_trace.sources import ModuleRef, Ref, TensorDict
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.binding import Bound, Given
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.rebuilt import rebuild
from transformer_trace.trace.reading.same_tensors import equal_tensors


def layers_of_input(check: Check, chain: Sequence[ModuleCall], source: TensorDict) -> Bound | None:
    """``check`` (a Linear of its input ``x``) read as ``chain`` (LayerNorms and at least one Linear, each fed the one
    before, the first fed the step's input as captured); None where the chain is not that."""
    module, out, x = getattr(check, "module", None), getattr(check, "out", None), getattr(check, "x", None)
    if (not isinstance(module, ModuleRef) or not isinstance(out, Ref) or not isinstance(x, Ref) or not source.has(x)
            or len(chain) < 2 or any(c.kind not in (ModuleKind.LINEAR, ModuleKind.LAYER_NORM) for c in chain)
            or not any(c.kind == ModuleKind.LINEAR for c in chain)):
        return None
    built = [rebuild(c, c.kind) for c in chain]
    if None in built or not chain[0].inputs or not equal_tensors(chain[0].inputs[0], source.t(x)):
        return None
    name = source.name(module)
    refs = tuple(ModuleRef(f"{name}@{c.module}.{i}") for i, c in enumerate(chain))
    given = Given(source, source.tensors, modules={ref.template: layer for ref, layer in zip(refs, built)})
    return Bound(LayersOfInput(out=out, x=x, layers=refs), given, None,
                 f"the modules it called ({' → '.join(c.module for c in chain)}), with their own weights")
