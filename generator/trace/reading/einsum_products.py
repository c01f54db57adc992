"""A projection written as an ``einsum`` of a local tensor with a parameter of the module, read as the Linear call it
is (round twenty-two's picoclvr, François Fleuret's MyGPT: ``q = torch.einsum("ntc,hdc->nhtd", x, self.w_q)`` with
``self.w_q`` an (h, d, C) ``nn.Parameter``, one raw matrix per head). No module is called and the parameter is no
(out, in) matrix, so products.py does not read it and the step was read as a head split of its input. Where the
line's own equation, on a local tensor the line read and the parameter, reproduces a tensor the line made, and the
two share one summed index (the features), that einsum is a Linear: its weight the parameter with the summed axis last
and its other axes flattened in their order (h·d rows, head by head), its output the einsum's with the parameter's
axes last and flattened, which is the line's output rearranged. Every check that reads a Linear call then reads it
(the heads recomputed from the Linear and the step that should feed it; K's weights on the queries' line named by the
parameter's name, called_names.py). An einsum that reproduces nothing the line made is left unread."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from functools import lru_cache

import torch

from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.feeders import block_of, dotted_name, parsed_source
from transformer_trace.trace.reading.products import PRODUCT, holds_values


@lru_cache(maxsize=1024)  # a pure function of the file's text: the reading asks once per hit
def einsum_operands(source: str, first: int, last: int) -> tuple[tuple[str, str, int], ...]:
    """Each ``einsum`` of two operands on the statement at lines ``first``–``last`` whose equation is a constant and
    one of whose operands is a ``self`` attribute chain: (the equation, the chain, its position, 0 or 1); () where
    there is none or the source does not parse."""
    tree = parsed_source(source)
    found = block_of(tree.body, first, last) if tree is not None else None
    if found is None:
        return ()
    body, index = found
    operands = []
    for node in ast.walk(body[index]):
        if not (isinstance(node, ast.Call) and _function(node.func) == "einsum" and len(node.args) == 3
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            continue
        chains = [dotted_name(arg) if isinstance(arg, ast.Attribute) else None for arg in node.args[1:]]
        for position, chain in enumerate(chains):
            if chain is not None and chain.startswith("self.") and chains[1 - position] is None:
                operands.append((node.args[0].value.replace(" ", ""), chain, position))
    return tuple(operands)


def with_einsums(calls: Sequence[ModuleCall], made: Sequence[torch.Tensor | None],
                 operands: Sequence[tuple[str, str, int]]) -> tuple[ModuleCall, ...]:
    """``calls`` and, after them, a Linear call for each einsum of ``operands`` (``einsum_operands``) whose parameter
    the line read and whose product with a local tensor it read reproduces one of ``made`` (the module docstring)."""
    read = {c.module: c.params.get("weight") for c in calls if c.kind == ModuleKind.READ}
    inputs = [t for c in calls if c.kind == ModuleKind.LOCAL and len(c.outputs) == 1 for t in c.outputs
              if isinstance(t, torch.Tensor) and t.is_floating_point() and t.dim() >= 2]
    steps = [t for t in made if isinstance(t, torch.Tensor) and t.is_floating_point()]
    found = []
    for equation, chain, position in operands:
        weight = read.get(chain)
        if not isinstance(weight, torch.Tensor) or not weight.is_floating_point() or weight.dim() < 2:
            continue
        call = next((c for x in inputs if (c := _einsum_linear(equation, chain, position, x, weight, steps))), None)
        if call is not None:
            found.append(call)
    return (*calls, *found)


def _einsum_linear(equation: str, chain: str, position: int, x: torch.Tensor, weight: torch.Tensor,
                   steps: Sequence[torch.Tensor]) -> ModuleCall | None:
    """The Linear the einsum ``equation`` of ``x`` with the parameter ``weight`` (operand ``position``) is, where the
    line's own equation on them reproduces one of ``steps`` and one index, the input's last, is summed; else None."""
    subscripts, arrow, out = equation.partition("->")
    parts = subscripts.split(",")
    if not arrow or len(parts) != 2 or "." in equation:
        return None
    xs, ws = parts[1 - position], parts[position]
    summed = [letter for letter in ws if letter in xs and letter not in out]
    if len(xs) != x.dim() or len(ws) != weight.dim() or len(summed) != 1 or xs[-1] != summed[0] \
            or len(set(xs)) != len(xs) or len(set(ws)) != len(ws) or len(set(xs) & set(ws)) != 1:
        return None  # (the input's other axes and the parameter's apart: a product batched over heads is no Linear)
    operands = (weight.double(), x.double()) if position == 0 else (x.double(), weight.double())
    try:
        line_made = torch.einsum(equation, *operands)
    except RuntimeError:  # shapes the equation does not take
        return None
    if not any(holds_values(line_made, step) for step in steps):
        return None
    kept = [ws.index(letter) for letter in ws if letter != summed[0]]  # the parameter's other axes, in its order
    matrix = weight.permute(*kept, ws.index(summed[0])).reshape(-1, x.shape[-1])  # (out, in), as nn.Linear's
    output = x.double() @ matrix.double().T
    written = f"einsum('{equation}', " + (f"{chain}, x)" if position == 0 else f"x, {chain})")
    return ModuleCall(chain, ModuleKind.LINEAR, 1, [x], [output.to(x.dtype)],
                      {"weight": matrix.contiguous(), "bias": None}, {PRODUCT: written})


def _function(func: ast.expr) -> str | None:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
