"""A sum whose every operand a module the marked line called gave (issue 40: evidence already captured is used before
a step is called not checkable). ``x = self.token_embedding(ids) + self.positional_embedding(ids)`` marked as G04
with neither lookup marked: the two embedding modules' calls gave the operands, so the sum is checked with their
outputs, in the order the line called them (each module once: positions looked up twice are one operand added twice,
a bug form the sum's check names). Only where the line called as many such modules as the sum has operands and none
of the operands is captured; a module call's output that does not broadcast to the step is no operand."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch

from transformer_trace.checks import SumOf
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.call_layout import in_order
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.same_tensors import equal_tensors

OPERAND_KINDS = (ModuleKind.EMBEDDING, ModuleKind.USER)


def _broadcasts(shape: Sequence[int], to: Sequence[int]) -> bool:
    return len(shape) <= len(to) and all(a in (1, b) for a, b in zip(reversed(shape), reversed(to)))


def _same_module(call: ModuleCall, other: ModuleCall) -> bool:
    """Whether two calls are of one module (a call records its class and parameters, not the instance): one class,
    the same parameters."""
    return call.module == other.module and call.params.keys() == other.params.keys() and all(
        equal_tensors(a, b) for a, b in zip(call.params.values(), other.params.values()))


def operands_summed(check: SumOf, calls: Sequence[ModuleCall], source: TensorDict, main: torch.Tensor | None,
                    order: tuple[int, ...] | None) -> tuple[SumOf, dict[str, torch.Tensor], str] | None:
    """``check`` with every operand the output of a module the line called, the tensors those are, and where they
    were taken from; None where an operand is captured or the line's calls do not give one each."""
    if main is None or len(check.operands) < 2 or any(source.has(ref) for ref in check.operands):
        return None
    called: list[tuple[ModuleCall, torch.Tensor]] = []  # each module the line itself called, first call, in order
    for call in calls:
        out = call.outputs[0] if call.outputs else None
        if (call.depth == 1 and call.kind in OPERAND_KINDS and isinstance(out, torch.Tensor) and out.is_floating_point()
                and _broadcasts(tuple(out.shape), tuple(main.shape))
                and not any(_same_module(call, earlier) for earlier, _ in called)):
            called.append((call, out))
    if len(called) != len(check.operands):
        return None
    names = [f"{source.name(ref)}@{call.module}.output" for ref, (call, _) in zip(check.operands, called)]
    tensors = {name: in_order(out, order) if out.shape == main.shape else out
               for name, (_, out) in zip(names, called)}
    note = (f"{', '.join(source.name(ref) for ref in check.operands)} taken from the outputs of the "
            f"{' and the '.join(call.module for call, _ in called)} the line called (no captured snapshot shows them)")
    return dataclasses.replace(check, operands=tuple(Ref(name) for name in names)), tensors, note
