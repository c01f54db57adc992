"""A marked line that calls a feed-forward's two Linear layers, an activation between them (``linear2(dropout(
activation(linear1(x))))``), where the catalogue claims the second Linear of an activation of the first one's output
(``LinearOf`` with ``activation``) and no snapshot shows that output: the claim is read with the first Linear's output
its call recorded (checks/activation_between.py ``LinearOfActivated``), so the activation between is checked against
what the second Linear was given, not assumed from it. Likewise a line that applies the activation to a Linear it
called (``x = F.gelu(self.fc1(x))`` inside the MLP, the LayerNorm before it unmarked): the GELU step's input and
weights are that call's (``activation_of_call``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from transformer_trace.checks import GeluOfLinear, LinearOf
from transformer_trace.checks.activation_between import LinearOfActivated
from transformer_trace.checks.layers import fitted_activation
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.call_layout import in_order
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.rebuilt import rebuild
from transformer_trace.trace.reading.weights import Bound, Given, holds_output, present


def activated_calls(check: Any, calls: Sequence[ModuleCall], source: TensorDict, main: Any,
                    order: tuple[int, ...] | None = None) -> Bound | None:
    """``check`` (a ``LinearOf`` with an activation, its input not captured) read as ``LinearOfActivated`` of the
    output of the Linear called just before the one whose output is the step, where an activation of the family (the
    identity included) makes the second one's input from it; None otherwise (something else ran between them: a
    dropout in training mode)."""
    if type(check) is not LinearOf or not check.activation or check.index or source.has(check.x):
        return None
    linears = [c for c in calls if c.kind == ModuleKind.LINEAR and c.inputs and c.outputs
               and c.inputs[0] is not None and c.outputs[0] is not None]
    if len(linears) < 2 or not holds_output(linears[-1].outputs[0], main):
        return None
    first, second = linears[-2], linears[-1]
    if fitted_activation(present(first.outputs[0]), present(second.inputs[0])) is None:
        return None
    module = rebuild(second, ModuleKind.LINEAR)
    if module is None:
        return None
    hidden = Ref(f"{source.name(check.x)}@{first.module}.output")
    given = Given(source, {**source.tensors, hidden.template: in_order(present(first.outputs[0]), order)},
                  modules={source.name(check.module): module})
    bound = LinearOfActivated(out=check.out, x=hidden, module=check.module, activation=check.activation)
    return Bound(bound, given, note=f"the weights of the {second.module} it called; the output of the {first.module} "
                                    "it called before it, the activation between them read from both calls")


# the members GeluOfLinear recomputes: a line whose output is another (a tanh) is not read as a GELU step
GELU_STEP_MEMBERS = ("GELU", "GELU (tanh)", "ReLU", "SiLU")


def activation_of_call(check: Any, calls: Sequence[ModuleCall], source: TensorDict, main: Any,
                       order: tuple[int, ...] | None = None) -> Bound | None:
    """``check`` (a ``GeluOfLinear``, its input not captured) read with the input and weights of the last Linear the
    line called whose output an activation the check recomputes makes the step from; None where there is none."""
    if type(check) is not GeluOfLinear or source.has(check.x) or main is None:
        return None
    linears = [c for c in calls if c.kind == ModuleKind.LINEAR and c.inputs and c.outputs
               and c.inputs[0] is not None and c.outputs[0] is not None
               and tuple(c.outputs[0].shape) == tuple(main.shape)]
    if not linears or fitted_activation(present(linears[-1].outputs[0]), present(main)) not in GELU_STEP_MEMBERS:
        return None
    call = linears[-1]
    module = rebuild(call, ModuleKind.LINEAR)
    if module is None:
        return None
    x = Ref(f"{source.name(check.x)}@{call.module}.input")
    given = Given(source, {**source.tensors, x.template: in_order(present(call.inputs[0]), order)},
                  modules={source.name(check.module): module})
    return Bound(GeluOfLinear(out=check.out, x=x, module=check.module), given,
                 note=f"the weights of the {call.module} it called; its input taken from that call (no snapshot "
                      "shows it)")
