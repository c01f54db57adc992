"""A gated MLP's hidden layer marked on the line that multiplies its two factors (``fuse = gate * up``, Gemma's
GeGLU): the GELU check of the MLP's hidden layer read as checks/gated.py ``GatedOfLinear``, its factors the two
tensors the line read (copied as it ran: ``TraceUse.reads_locals``), where their product is the step. The
encoder–decoder catalogue's two FFN steps read the same family: the first Linear's output marked after its activation
(``activated_gate_bound``), the second Linear given the gate times the up projection (``gated_down_bound``)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch

from transformer_trace.checks import Check, LinearOf, close
from transformer_trace.checks.activation_between import IDENTITY
from transformer_trace.checks.gated import ActivatedLinearOf, GatedFactors, GatedOfLinear, LinearOfGated
from transformer_trace.checks.layers import ACTIVATIONS, GATES, fitted_activation
from transformer_trace.checks.activation import GeluOfLinear
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.call_layout import in_order
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.rebuilt import rebuild
from transformer_trace.trace.reading.weights import Bound, Given, holds_output, present


def gated_bound(check: Any, calls: Sequence[ModuleCall], source: TensorDict, main: torch.Tensor | None,
                known: dict[str, Any] | None) -> Bound | None:
    """``check`` (the hidden layer's GELU) read as a gated MLP where its line read exactly two tensors of the step's
    shape whose product is the step; None otherwise."""
    if not isinstance(check, GeluOfLinear) or main is None:
        return None
    read = [(c.module, c.outputs[0]) for c in calls if c.kind == ModuleKind.LOCAL and len(c.outputs) == 1
            and c.outputs[0] is not None and c.outputs[0].shape == main.shape]
    if len(read) in (1, 2) and (split := _split_halves(check, read, source, known)) is not None:
        return split
    if len(read) != 2 or not close(main, read[0][1] * read[1][1], "")[0]:
        return _called_factors_bound(check, calls, source, main, known)
    names = [f"{name}@line.read" for name, _ in read]
    given = Given(source, {**source.tensors, **{name: tensor for name, (_, tensor) in zip(names, read)}},
                  modules=dict(known or {}))
    gated = GatedOfLinear(out=check.out, x=check.x, module=check.module, gate=Ref(names[0]), up=Ref(names[1]))
    return Bound(gated, given, None, f"`{read[0][0]}` and `{read[1][0]}`, the factors the line multiplied")


def _split_halves(check: Any, read: list[tuple[str, torch.Tensor]], source: TensorDict,
                  known: dict[str, Any] | None) -> Bound | None:
    """The hidden layer made on its line as an activation of one tensor it read times another (``silu(x1) * x2``, the
    halves of one projection split on an earlier line: no product of the two as read), read as checks/gated.py
    ``GatedFactors``; or, the line reading one such tensor, as its activation times itself (the up factor never read).
    None where neither is so."""
    main = source.t(check.out)
    tensors = [tensor for _, tensor in read]
    if len(read) == 2 and close(main, tensors[0] * tensors[1], "")[0]:
        return None  # the plain product: GatedOfLinear's reading
    if any(close(main, act(tensor), "")[0] for act in GATES.values() for tensor in tensors):
        return None  # an activation of what the line read (Swish written ``x * sigmoid(x)`` is SiLU): not gated
    if not any(close(main, act(gate) * up, "")[0] for act in GATES.values()
               for gate, up in itertools.permutations(tensors + tensors[:1], 2)):
        return None
    names = [f"{name}@line.read" for name, _ in read]
    factors = GatedFactors(out=check.out, gate=Ref(names[0]), up=Ref(names[1]) if len(names) == 2 else None)
    said = " and ".join(f"`{name}`" for name, _ in read)
    return _factors_bound(factors, source, dict(zip(names, tensors)), known,
                          f"{said}, the tensor{'s' if len(read) == 2 else ''} the line read")


def _called_factors_bound(check: Any, calls: Sequence[ModuleCall], source: TensorDict, main: torch.Tensor,
                          known: dict[str, Any] | None) -> Bound | None:
    """``check`` read as a gated MLP whose line called two Linears on one input, outputs of the step's shape, and
    multiplied an activation of one (the family's member that fits, the identity included: the gate's activation
    left out is that bug form) by the other (``F.silu(self.fc1(x)) * self.fc3(x)``, AIMv2's SwiGLU); None otherwise."""
    linears = [c for c in calls if c.kind == ModuleKind.LINEAR and c.inputs and c.outputs and c.inputs[0] is not None
               and c.outputs[0] is not None and c.outputs[0].shape == main.shape]
    if len(linears) != 2 or not close(present(linears[0].inputs[0]), present(linears[1].inputs[0]), "")[0]:
        return None
    for gate_call, up_call in (linears, linears[::-1]):
        gate_out, up = present(gate_call.outputs[0]), present(up_call.outputs[0])
        activation = next((name for name, act in ACTIVATIONS.items() if close(main, act(gate_out) * up, "")[0]), None)
        module = rebuild(gate_call, ModuleKind.LINEAR)
        if activation is None or module is None:
            continue
        names = {"x": f"{gate_call.module}.input", "gate": f"{activation}({gate_call.module})@line.called",
                 "up": f"{up_call.module}@line.called"}
        tensors = {names["x"]: present(gate_call.inputs[0]), names["gate"]: ACTIVATIONS[activation](gate_out),
                   names["up"]: up}
        gated = GatedOfLinear(out=check.out, x=Ref(names["x"]), module=check.module, gate=Ref(names["gate"]),
                              up=Ref(names["up"]))
        return _factors_bound(gated, source, tensors, known, f"the weights of the {gate_call.module} it called and "
                              f"the output of the {up_call.module} it called, the factors the line multiplied",
                              modules={source.name(check.module): module},
                              said=((source.name(check.module), f"the {gate_call.module} your line called"),))
    return None


def _factors_bound(read: Check, source: TensorDict, factors: dict[str, torch.Tensor], known: dict[str, Any] | None,
                   note: str, modules: dict[str, Any] | None = None, said: tuple[tuple[str, str], ...] = ()) -> Bound:
    """``read`` (a gated reading of the hidden layer) bound to the factors the line multiplied, by name, beside the
    captured tensors, and to the modules other lines called (``known``) and the line's own rebuilt (``modules``)."""
    given = Given(source, {**source.tensors, **factors}, modules={**dict(known or {}), **(modules or {})})
    return Bound(read, given, None, note, said=said)


def activated_gate_bound(check: Any, calls: Sequence[ModuleCall], source: TensorDict, main: torch.Tensor | None,
                         order: tuple[int, ...] | None = None) -> Bound | None:
    """``check`` (a first Linear's output, ``LinearOf`` without an activation) read as ``ActivatedLinearOf`` where the
    step is an activation of the family (not the identity) of a Linear the line called, its weights that call's; the
    call's own input read too (a gate given the un-normalised stream: computed from another tensor). None otherwise."""
    if type(check) is not LinearOf or check.activation or check.index or main is None:
        return None
    for call in reversed([c for c in calls if c.kind == ModuleKind.LINEAR and c.inputs and c.outputs
                          and c.inputs[0] is not None and c.outputs[0] is not None]):
        activation = fitted_activation(present(call.outputs[0]), main)  # both as the line called them
        module = rebuild(call, ModuleKind.LINEAR)
        if activation in (None, IDENTITY) or module is None:
            continue
        own = Ref(f"{source.name(check.x)}@{call.module}.input")
        given = Given(source, {**source.tensors, own.template: in_order(present(call.inputs[0]), order)},
                      modules={source.name(check.module): module})
        read = ActivatedLinearOf(out=check.out, x=check.x, module=check.module, activation=activation)
        own_input = replace(read, x=own)
        return Bound(read if source.has(check.x) else own_input, given, own_input if source.has(check.x) else None,
                     f"the weights of the {call.module} it called, the {activation} after it read from the step",
                     said=((source.name(check.module), f"the {call.module} your line called"),))
    return None


def gated_down_bound(check: Any, calls: Sequence[ModuleCall], source: TensorDict, main: torch.Tensor | None,
                     order: tuple[int, ...] | None = None) -> Bound | None:
    """``check`` (the second Linear of an activation of the first one's output, its input captured) read as
    ``LinearOfGated`` where the Linear whose output is the step was given the product of two tensors the line read, one
    of them the first Linear's step or an activation of it; None otherwise."""
    if type(check) is not LinearOf or not check.activation or check.index or not source.has(check.x):
        return None
    linears = [c for c in calls if c.kind == ModuleKind.LINEAR and c.inputs and c.inputs[0] is not None
               and c.outputs and holds_output(c.outputs[0], main)]
    module = rebuild(linears[-1], ModuleKind.LINEAR) if linears else None
    if module is None:
        return None
    hidden = present(linears[-1].inputs[0])
    read = [(c.module, present(c.outputs[0])) for c in calls if c.kind == ModuleKind.LOCAL and len(c.outputs) == 1
            and c.outputs[0] is not None and c.outputs[0].shape == hidden.shape]
    if len(read) != 2 or not close(hidden, read[0][1] * read[1][1], "")[0]:
        return None
    gate = source.t(check.x)
    factors = sorted(read, key=lambda named: float((in_order(named[1], order) - gate).abs().max())
                     if in_order(named[1], order).shape == gate.shape else float("inf"))
    names = [f"{name}@line.read" for name, _ in factors]
    given = Given(source, {**source.tensors, **{name: in_order(t, order) for name, (_, t) in zip(names, factors)}},
                  modules={source.name(check.module): module})
    bound = LinearOfGated(out=check.out, gate=check.x, factor=Ref(names[0]), up=Ref(names[1]), module=check.module)
    return Bound(bound, given, None, f"the weights of the {linears[-1].module} it called; `{factors[0][0]}` × "
                 f"`{factors[1][0]}`, the factors the line multiplied",
                 said=((source.name(check.module), f"the {linears[-1].module} your line called"),))
