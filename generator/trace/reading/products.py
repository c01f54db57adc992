"""A projection written as a product with a raw parameter matrix on the marked line (``torch.matmul(x, self.W)``,
``x @ self.W + self.b``, ``F.linear(x, self.weight, self.bias)``: a student's ViT with no ``nn.Linear``), read as the
Linear call it is. Where a local tensor the line read, times a parameter matrix it read by attribute (in either
orientation, plus a bias vector it read where that is what the line did), reproduces a tensor the line made, that
product is one more Linear call of the line, with the weight (out, in), the bias and its input: every check that reads
a Linear call then reads it (the projection's own check, its input standing in for a step nobody marked, the readers
of one tensor agreeing). Where no product reproduces what the line made (the line did more, or something else),
nothing is made up. A matrix only a raw product on a statement before the line read (product_feeders.py: ``Q =
torch.matmul(x, self.W_Q)`` above ``Q = Q.view(...)  # BREAKPOINT S09``) is read so too, its product reproducing what
the line made or a local it read (the pre-activation ``linear1`` of ``self.gelu(linear1)``): a Linear that statement
computed, as a module call of a feeding statement is (feeders.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch

from transformer_trace.checks import close
from transformer_trace.trace.child.protocol import FED_AT, ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall

PRODUCT = "product"  # such a call's attribute: how the line wrote it ("x @ W + self.b")


def with_products(calls: Sequence[ModuleCall], made: Sequence[torch.Tensor | None],
                  fed: Sequence[tuple[str, int]] = ()) -> tuple[ModuleCall, ...]:
    """``calls`` and, after them, a Linear call for each parameter matrix the line read whose product with a local
    tensor the line read reproduces one of ``made``; ``fed``: the matrices (and biases) read for a raw product on a
    statement before the line, each with that statement's line, whose product may reproduce a local the line read
    instead (the module docstring)."""
    matrices = [c for c in calls if c.kind == ModuleKind.READ and _floating(c.params.get("weight"), 2)]
    if not matrices:
        return tuple(calls)
    vectors = [c for c in calls if c.kind == ModuleKind.READ and _floating(c.params.get("weight"), 1)]
    inputs = [t for c in calls if c.kind == ModuleKind.LOCAL and len(c.outputs) == 1
              for t in c.outputs if _floating(t, None) and t is not None and t.dim() >= 2]
    steps = [t for t in made if t is not None and _floating(t, None)]
    lines = dict(fed)
    found = [call for matrix in matrices
             if (call := _fed_product(matrix, inputs, vectors, [*steps, *inputs], lines) if matrix.module in lines
                 else _product(matrix, inputs, vectors, steps)) is not None]
    return (*calls, *found)


def _fed_product(matrix: ModuleCall, inputs: Sequence[torch.Tensor], vectors: Sequence[ModuleCall],
                 steps: Sequence[torch.Tensor], lines: dict[str, int]) -> ModuleCall | None:
    """The product a statement before the line computed with ``matrix`` (and a bias read with it), reproducing what
    the line made or a local tensor it read, marked as that statement's call (``FED_AT``: its line); None where none
    does."""
    call = _product(matrix, inputs, [v for v in vectors if v.module in lines], steps)
    return None if call is None else replace(call, attrs={**call.attrs, FED_AT: lines[matrix.module]})


def _product(matrix: ModuleCall, inputs: Sequence[torch.Tensor], vectors: Sequence[ModuleCall],
             steps: Sequence[torch.Tensor]) -> ModuleCall | None:
    stored = matrix.params["weight"]
    assert stored is not None  # (with_products read only floating matrices)
    for weight, form in ((stored.T, "x @ W"), (stored, "x @ Wᵀ")):  # (in, out) for matmul; (out, in) as F.linear
        biases = [v for v in vectors if (b := v.params["weight"]) is not None and b.shape[0] == weight.shape[0]]
        for x in inputs:
            if x.shape[-1] != weight.shape[1]:
                continue
            product = x.double() @ weight.double().T
            for vector in (None, *biases):
                bias = None if vector is None else vector.params["weight"]
                output = product if bias is None else product + bias.double()
                if any(holds_values(output, step) for step in steps):
                    written = f"{form.replace('W', matrix.module)}" + (f" + {vector.module}" if vector else "")
                    return ModuleCall(matrix.module, ModuleKind.LINEAR, 1, [x], [output.to(x.dtype)],
                                      {"weight": weight.contiguous(), "bias": bias}, {PRODUCT: written})
    return None


def holds_values(output: torch.Tensor, step: torch.Tensor) -> bool:
    """Whether ``output`` holds the step's values, in whatever layout the line gave them (a view on the same line)."""
    return output.numel() == step.numel() and close(output.flatten().sort().values,
                                                    step.double().flatten().sort().values, "")[0]


def _floating(tensor: torch.Tensor | None, dim: int | None) -> bool:
    return (isinstance(tensor, torch.Tensor) and tensor.is_floating_point()
            and (tensor.dim() == dim if dim is not None else tensor.dim() >= 1))
