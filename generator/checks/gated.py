"""A gated MLP's hidden layer (GeGLU in Gemma, SwiGLU in Llama): act(fc1(x)) × up(x), the activated first Linear
times a second Linear of the same input. Such a hidden layer is no activation's output (a GELU's never goes below
−0.17, a product of two factors does), so it is read as the product of the two factors the marked line multiplied
(``fuse = gate * up``): the gate checked to be an activation of fc1 applied to the MLP's input, the step to be the
product; the up projection, made by a Linear on an unmarked line, is taken as the line read it. A catalogue that
claims the first Linear's output and then the second Linear of its activation (the encoder–decoder's position-wise
FFN) reads the same family: the gate marked after its activation (``ActivatedLinearOf``), the second Linear applied to
the gate times the up projection its line multiplied (``LinearOfGated``). The gate's activation is checks/layers.py's
one family (less its identity: ``GATES``), fitted, said by the family's names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from transformer_trace.checks.base import THIS, Check, close, linear
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.checks.layers import ACTIVATIONS, GATES, NO_ACTIVATION
from transformer_trace.sources import ModuleRef, Ref, TensorSource


def _gate_unactivated(check: Any, s: TensorSource) -> Fit | None:
    """The product of fc1's raw output and the other factor: the gate's activation left out (``fc1(x) * fc3(x)``)."""
    out, pre = s.t(check.out), linear(s, check.module, s.t(check.x))
    if (halves := fused_halves(pre, out)) is not None:  # fc1 fused: its two halves multiplied as they came out
        fits, detail = close(out, halves[0][1] * halves[1][1], "vs fc1(input)'s two halves multiplied, no activation")
        return Fit(fits, f"the gate's activation was left out: your {s.name(check.out)} is the product of the two "
                         f"halves of fc1(input), as they came out of the Linear ({detail})" if fits else detail)
    for factor in (check.up, check.gate):
        fits, detail = close(out, pre * s.t(factor), f"vs fc1(input) × {s.name(factor)}, no activation between")
        if fits:
            return Fit(True, f"the gate's activation was left out: your {s.name(check.out)} is fc1(input), as it "
                             f"came out of the Linear, times the other factor ({detail})")
    return Fit(False, "fc1(input) times either factor, without an activation, does not fit")


def fused_halves(pre: Any, out: Any) -> tuple[tuple[str, Any], tuple[str, Any]] | None:
    """fc1's output split into its two halves (``chunk(2, dim=-1)``), each named, where it is twice the step's width
    and of the step's other sizes; None otherwise."""
    if pre.dim() != out.dim() or pre.shape[:-1] != out.shape[:-1] or pre.shape[-1] != 2 * out.shape[-1]:
        return None
    first, second = pre.chunk(2, dim=-1)
    return ("first", first), ("second", second)


def _activated_own_half(check: Any, s: TensorSource) -> Fit | None:
    """The step as an activation of one half of the fused fc1(input) times that same half (``swish(up) * up``): the
    activation applied to the up half, the gate half never read."""
    out = s.t(check.out)
    halves = fused_halves(linear(s, check.module, s.t(check.x)), out)
    if halves is None:
        return None
    for which, half in halves:
        for name, activation in GATES.items():
            fits, detail = close(out, activation(half) * half, f"vs {name}(fc1(input)'s {which} half) × that half")
            if fits:
                return Fit(True, f"the gate was applied to the wrong half: your {s.name(check.out)} is {name} of "
                                 f"fc1(input)'s {which} half times that same half, so the other half is never read "
                                 f"({detail})")
    return Fit(False, "no activation of a half of fc1(input) times that same half fits")


@dataclass(frozen=True, kw_only=True)
class GatedOfLinear(Check):
    """``out`` is ``gate`` × ``up`` (the two tensors its line multiplied, either order), ``gate`` an activation of the
    Linear ``module`` applied to ``x``."""

    SUBSTITUTES = False  # the factors are the line's own: no other captured tensor stands in for them
    BUG_FORMS: ClassVar[tuple[BugForm, ...]] = (
        BugForm("the gate's activation left out", "the step vs fc1(input) × the other factor, no activation",
                _gate_unactivated),
        BugForm("the gate applied to the wrong half", "the step vs an activation of one half of the fused fc1(input) "
                "× that same half", _activated_own_half))

    out: Ref = THIS
    x: Ref
    module: ModuleRef
    gate: Ref
    up: Ref

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        out, pre = s.t(self.out), linear(s, self.module, s.t(self.x))
        if (halves := fused_halves(pre, out)) is not None:
            return self._of_halves(s, halves)
        details = []
        for gate, up in ((self.gate, self.up), (self.up, self.gate)):
            product, product_detail = close(out, s.t(gate) * s.t(up), f"vs {s.name(gate)} × {s.name(up)}")
            for name, activation in GATES.items():  # the one family checks/layers.py fits, less its identity
                fits, detail = close(s.t(gate), activation(pre), f"{s.name(gate)} vs {name}(fc1(input))")
                if fits:
                    return (f"equals {name}(fc1(input)) × the up projection the line read: a gated MLP", product,
                            f"{detail}; {product_detail}")
            details.append(product_detail)
        return "equals an activation of fc1(input) × the up projection: a gated MLP", False, (
            f"neither factor the line multiplied is {', '.join(GATES)} of fc1(input); {details[0]}")

    def _of_halves(self, s: TensorSource, halves: tuple[Any, Any]) -> tuple[str, bool, str]:
        """fc1 fused, its output twice the step's width (``gate, up = self.fc1(x).chunk(2, dim=-1)`` on a line before):
        one factor the line multiplied an activation of one half (made on a statement before it: ``activated =
        swish(gate)``), the other factor the other half, and the step their product."""
        out = s.t(self.out)
        for gate, up in ((self.gate, self.up), (self.up, self.gate)):
            for (first, gate_half), (_, up_half) in ((halves[0], halves[1]), (halves[1], halves[0])):
                for name, activation in GATES.items():
                    if not close(s.t(gate), activation(gate_half), "")[0]:
                        continue
                    own_up, up_detail = close(s.t(up), up_half, f"{s.name(up)} vs fc1(input)'s other half")
                    product, detail = close(out, activation(gate_half) * up_half,
                                            f"recomputed {name}(fc1(input)'s {first} half) × its other half")
                    return (f"equals {name} of one half of the fused fc1(input) × its other half: a gated MLP",
                            own_up and product, f"{s.name(gate)} is {name} of fc1(input)'s {first} half; {up_detail}; "
                                                f"{detail}")
        return "equals an activation of one half of the fused fc1(input) × its other half: a gated MLP", False, (
            f"neither factor the line multiplied is {', '.join(GATES)} of either half of fc1(input) (fc1's output "
            "twice the step's width: a fused gate and up projection)")


@dataclass(frozen=True, kw_only=True)
class ActivatedLinearOf(Check):
    """``out`` is ``activation`` (a member of checks/layers.py's family) of the Linear ``module`` applied to ``x``: a
    first Linear's step marked after the activation its line applied (a gated MLP's gate, ``act_fn(gate_proj(x))``)."""

    out: Ref = THIS
    x: Ref
    module: ModuleRef
    activation: str

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        name = s.name(self.module)
        passed, detail = close(s.t(self.out), ACTIVATIONS[self.activation](linear(s, self.module, s.t(self.x))),
                               f"recomputed {self.activation}(x·Wᵀ + b) with {name}'s weights")
        return (f"equals {name} applied to its input, through the {self.activation} its line applied (a gated MLP's "
                "gate, or the MLP's activation)"), passed, detail


@dataclass(frozen=True, kw_only=True)
class LinearOfGated(Check):
    """``out`` is the Linear ``module`` applied to a gated MLP's hidden layer: ``gate`` (the first Linear's step, or an
    activation of it, the family's member that fits) × ``up`` (the other factor the line multiplied, the up projection
    an unmarked line made), ``factor`` the gate's factor as the line read it."""

    SUBSTITUTES = False  # the factors are the line's own

    out: Ref = THIS
    gate: Ref
    factor: Ref
    up: Ref
    module: ModuleRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        name, factor = s.name(self.module), s.t(self.factor)
        for activation, function in ACTIVATIONS.items():
            gate = function(s.t(self.gate))
            if close(factor, gate, "")[0]:
                said = f"{activation} of " if activation != NO_ACTIVATION else ""  # the step after its activation
                passed, detail = close(s.t(self.out), linear(s, self.module, gate * s.t(self.up)),
                                       f"recomputed {name}(gate × up) with gate = {said}{s.name(self.gate)} and up "
                                       "the other factor the line read")
                return (f"equals {name} applied to a gated hidden layer: {said or 'the gate, '}the first Linear's "
                        "step × the up projection the line read"), passed, detail
        _, detail = close(factor, s.t(self.gate), f"the line's factor vs {s.name(self.gate)}")
        return f"equals {name} applied to a gated hidden layer", False, (
            f"neither factor the line multiplied is the first Linear's output or an activation of it: {detail}")


def _gate_times_itself(check: Any, s: TensorSource) -> Fit | None:
    """The step as one factor's activation times that factor itself (``silu(x1) * x1``): the other half of the
    projection never read. The activation fitted from the family."""
    out = s.t(check.out)
    for factor in dict.fromkeys(r for r in (check.gate, check.up) if r is not None):
        for name, activation in GATES.items():
            fits, detail = close(out, activation(s.t(factor)) * s.t(factor), f"vs {name}({s.name(factor)}) × "
                                 f"{s.name(factor)}")
            if fits:
                return Fit(True, f"your gated hidden layer multiplies {name}({s.name(factor)}) by "
                                 f"{s.name(factor)} itself: the up factor is never read ({detail})")
    return Fit(False, f"no factor's activation times that factor fits {s.name(check.out)}")


GATE_TIMES_ITSELF = BugForm("the gate times itself", "the step as an activation of one factor the line read times "
                            "that factor itself (each member of the family)", _gate_times_itself)


@dataclass(frozen=True, kw_only=True)
class GatedFactors(Check):
    """``out`` is an activation (the family's member that fits) of ``gate`` times ``up``: a gated MLP's hidden layer
    made on one line from two tensors it read (the two halves of one projection split on an earlier line,
    ``x1, x2 = up_proj(x).split(M)``, ``silu(x1) * x2``), either order; ``up`` None where the line read only one
    tensor of the step's shape."""

    SUBSTITUTES = False  # the factors are the line's own
    BUG_FORMS = (GATE_TIMES_ITSELF,)

    out: Ref = THIS
    gate: Ref
    up: Ref | None

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        out, claim = s.t(self.out), "equals an activation of one factor the line read × the other: a gated MLP"
        if self.up is None:
            # relu(x)·x is relu(x)²: the squared ReLU of one tensor (So et al.'s Primer, modded-nanogpt's
            # F.relu(x).square()) is an activation, a correct MLP, where a gate's own factor would be a bug
            squared, detail = close(out, torch.relu(s.t(self.gate)) ** 2, f"vs ReLU({s.name(self.gate)})²")
            if squared:
                return (f"equals ReLU({s.name(self.gate)})²: the squared ReLU of the one tensor the line read "
                        "(Primer's activation, not a gated layer)"), True, detail
            return claim, False, f"the line read one tensor of the step's shape, {s.name(self.gate)}: no second factor"
        for gate, up in ((self.gate, self.up), (self.up, self.gate)):
            for name, activation in GATES.items():
                fits, detail = close(out, activation(s.t(gate)) * s.t(up), f"vs {name}({s.name(gate)}) × "
                                     f"{s.name(up)}")
                if fits:
                    return f"equals {name}({s.name(gate)}) × {s.name(up)}: a gated MLP's hidden layer", True, detail
        _, detail = close(out, s.t(self.gate) * s.t(self.up), f"vs {s.name(self.gate)} × {s.name(self.up)}")
        return claim, False, (f"no member of the family ({', '.join(GATES)}) of either factor times the other "
                              f"fits; {detail}")
