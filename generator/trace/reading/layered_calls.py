"""A marked line whose step is the last of several Linear layers it called, each fed by the one before through an
activation (an MLP head in an ``nn.Sequential``): where the catalogue claims one Linear of the step's input
(``LinearOf``), the claim is read as the whole chain (checks/layers.py ``LayersOf``) instead of applying the last
layer to the step's input, which fitted no shape and was said as PyTorch's exception."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from transformer_trace.checks import LinearOf
from transformer_trace.checks.layers import LayersOf, fitted_activation
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.rebuilt import rebuild
from transformer_trace.trace.reading.weights import Bound, Given, holds_output, present


def layered_calls(check: Any, calls: Sequence[ModuleCall], source: TensorDict, main: Any) -> Bound | None:
    """``check`` (a ``LinearOf`` of one Linear, no activation) read as the chain of the Linear layers the line called,
    where the last one's output is the step and each before it feeds the next through an activation of the family;
    None where the line called fewer than two such layers or they do not chain."""
    if type(check) is not LinearOf or check.activation or check.index or not source.has(check.x):
        return None
    linears = [c for c in calls if c.kind == ModuleKind.LINEAR and c.inputs and c.outputs
               and c.inputs[0] is not None and c.outputs[0] is not None]
    if len(linears) < 2 or not holds_output(linears[-1].outputs[0], main):
        return None
    chain, activations = [linears[-1]], list[str]()
    for layer in reversed(linears[:-1]):
        activation = fitted_activation(present(layer.outputs[0]), present(chain[0].inputs[0]))
        if activation is None:
            break
        chain.insert(0, layer)
        activations.insert(0, activation)
    first = present(chain[0].inputs[0])
    if len(chain) < 2 or first.shape[-1] != source.t(check.x).shape[-1]:
        return None
    last = source.name(check.module)
    names = tuple(f"{last}@layer{i}" for i in range(len(chain) - 1))
    modules = {name: rebuild(call, ModuleKind.LINEAR) for name, call in zip((*names, last), chain)}
    if any(module is None for module in modules.values()):
        return None
    layered = LayersOf(out=check.out, x=check.x, module=check.module, layers=names, activations=tuple(activations))
    own = Ref(f"{source.name(check.x)}@{chain[0].module}.input")
    given = Given(source, {**source.tensors, own.template: first}, modules=modules)
    steps = ", ".join(f"{call.module}" for call in chain)
    return Bound(layered, given, own_input=LayersOf(out=check.out, x=own, module=check.module, layers=names,
                                                    activations=tuple(activations)),
                 note=f"the {len(chain)} Linear layers the line called ({steps}), the activations between them "
                      f"fitted from their own inputs and outputs: {', '.join(activations)}")
