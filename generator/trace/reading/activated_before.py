"""The Linear whose output the marked line activated (round twenty's DeiT: ``x = self.fc1(x)`` on an unmarked statement,
then ``x = self.act(x)  # BREAKPOINT S17``; or ``self.act(self.fc1(x))`` on the line): the MLP's hidden step is no
call's output, so the catalogue's check, which takes the Linear whose output is the step, found none and read GELU's
range alone (a necessary condition). The Linear taken here is the one an activation of the family makes the step from;
the check then recomputes the activation of that Linear from its own weights and input, and tries the family itself."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from transformer_trace.checks.layers import NO_ACTIVATION, fitted_activation
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall


def activated_linear(calls: Sequence[ModuleCall], main: torch.Tensor | None) -> ModuleCall | None:
    """The last Linear the line called (or an unmarked statement before it, whose output it read) whose output an
    activation other than none makes the step; None where there is none."""
    if main is None or not main.is_floating_point():
        return None
    found = [call for call in calls if call.kind == ModuleKind.LINEAR and call.depth == 1 and call.outputs
             and isinstance(output := call.outputs[0], torch.Tensor) and output.shape == main.shape
             and fitted_activation(output, main) not in (None, NO_ACTIVATION)]
    return found[-1] if found else None
