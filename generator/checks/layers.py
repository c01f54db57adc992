"""A step made by several Linear layers called on one line, an activation between each two: an MLP head
(Linear–Tanh–Linear, the paper's pre-training head), written where the catalogue's claim is one Linear of the step's
input. The activation is a family (none, ReLU, GELU exact or tanh, Tanh, SiLU, sigmoid), fitted from the layers' own
inputs and outputs (trace/reading/layered_calls.py), never assumed."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from transformer_trace.checks.base import THIS, Check, close, linear
from transformer_trace.sources import ModuleRef, Ref, TensorSource

ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "no activation": lambda x: x, "ReLU": F.relu, "GELU": F.gelu,
    "GELU (tanh)": lambda x: F.gelu(x, approximate="tanh"), "Tanh": torch.tanh, "SiLU": F.silu,
    "sigmoid": torch.sigmoid}
NO_ACTIVATION = "no activation"
# what a gated MLP's gate may be read with (checks/gated.py): every member that activates (GeGLU's exact and tanh GELU,
# SwiGLU's SiLU, ReGLU's ReLU, the first GLU's sigmoid, a tanh)
GATES = {name: act for name, act in ACTIVATIONS.items() if name != NO_ACTIVATION}


def fitted_activation(before: torch.Tensor, after: torch.Tensor) -> str | None:
    """The member of the family that makes ``after`` (the next layer's input) from ``before`` (a layer's output)."""
    if before.shape != after.shape:
        return None
    return next((name for name, act in ACTIVATIONS.items()
                 if close(after.double(), act(before.double()), "")[0]), None)


@dataclass(frozen=True, kw_only=True)
class LayersOf(Check):
    """``out`` is ``module`` (a Linear) applied to ``x`` through the Linear layers ``layers`` before it (record names,
    in order), each followed by its activation (``activations``, names of ``ACTIVATIONS``)."""

    out: Ref = THIS
    x: Ref
    module: ModuleRef
    layers: tuple[str, ...]
    activations: tuple[str, ...]

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        hidden = s.t(self.x)
        for layer, activation in zip(self.layers, self.activations):
            hidden = ACTIVATIONS[activation](linear(s, ModuleRef(layer), hidden))
        expected = linear(s, self.module, hidden)
        actual = s.t(self.out)
        if actual.shape != expected.shape and actual.numel() == expected.numel():
            actual = actual.reshape(expected.shape)
        chain = "–".join(part for activation in self.activations for part in ("Linear", activation)
                         if part != "no activation") + "–Linear"
        passed, detail = close(actual, expected, f"recomputed {chain} with the weights of the {len(self.layers) + 1} "
                               "Linear layers its line called")
        width = math.prod(s.t(self.x).shape[-1:])
        return f"equals its input through the layers its line called ({chain}, from width {width})", passed, detail
