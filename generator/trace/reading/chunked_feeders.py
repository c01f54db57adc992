"""A fused projection chunked on the statement before a marked head split (round twenty-two's nicolagheza: ``qkv =
self.qkv_proj(x)``, ``q, k, v = qkv.chunk(3, dim=-1)``, then ``q = q.reshape(B, N, h, hs).transpose(1, 2)  #
BREAKPOINT S09``; met before in rounds twenty and twenty-one). The marked line reads one third of the Linear's output,
so no local holds that output as it is or rearranged (feeders.py ``as_read``), and q, k and v were read "as the line
read them": a K taken from the wrong chunk was not seen. Read here in that exact form only: the statement that
assigned the name the marked line reads splits, on its last axis, the output of a module call assigned as it is, and
the marked line only rearranges that part (a view, a reshape, a transpose), or rearranges a local that statements
between only rearranged from it (round twenty-three's Andreathegm: ``q, k, v = qkv.chunk(3, dim=-1)``, ``q =
q.view(B, N, h, hs)``, then ``q = q.transpose(1, 2)  # BREAKPOINT S09``: followed however many such statements lie
between). Round twenty's trace-back of a projection
rearranged on its own statement (73a1e59) was taken out for reading other forms (queries scaled where taken, a split
over the heads axis): a scale, an index or a split on another axis is not this form, and its line reads as before."""

from __future__ import annotations

import ast
from functools import lru_cache

from transformer_trace.trace.reading.feeders import block_of, names_bound, parsed_source, projects

SPLITS = ("chunk", "split")  # tensor.chunk(3, dim=-1), tensor.split(C, dim=-1), torch.chunk(qkv, 3, -1)
REARRANGING = ("reshape", "view", "transpose", "permute", "contiguous", "flatten", "unflatten")


@lru_cache(maxsize=1024)  # a pure function of the file's text: `trace` asks once per hit
def chunked_projections(source: str, first: int, last: int) -> frozenset[int]:
    """The first line of the statement whose module call's output the statement feeding the marked one (lines
    ``first``–``last``) split on its last axis, where the marked line only rearranges one of the parts (or a local
    only rearranged from one by the statements between); empty where the code is not of that form."""
    tree = parsed_source(source)
    found = block_of(tree.body, first, last) if tree is not None else None
    if found is None:
        return frozenset()
    body, index = found
    part = _rearranged_name(body[index])
    if part is None:
        return frozenset()
    earlier = list(reversed(body[:index]))
    split_at = next((i for i, node in enumerate(earlier) if part in names_bound(node)), len(earlier))
    while split_at < len(earlier) and _split_of(earlier[split_at], part) is None:
        part = _rearranged_name(earlier[split_at])  # ``q = q.view(B, N, h, hs)`` between the chunk and the line
        if part is None:
            return frozenset()
        split_at = next((i for i, node in enumerate(earlier) if i > split_at and part in names_bound(node)),
                        len(earlier))
    fused = _split_of(earlier[split_at], part) if split_at < len(earlier) else None
    if fused is None:
        return frozenset()
    for node in earlier[split_at + 1:]:
        if fused in names_bound(node):
            return frozenset({node.lineno}) if projects(node) and _binds_only(node, fused) else frozenset()
    return frozenset()


def _rearranged_name(node: ast.stmt) -> str | None:
    """The one name a marked ``x = part.reshape(...).transpose(1, 2)`` rearranges (nothing but rearranging methods
    on it, their arguments reading no tensor of the block); None for any other statement."""
    if not isinstance(node, ast.Assign) or len(node.targets) != 1:
        return None
    value = node.value
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in REARRANGING:
        value = value.func.value
    if not isinstance(value, ast.Name) or value is node.value:
        return None
    return value.id


def _split_of(node: ast.stmt, part: str) -> str | None:
    """The name a ``q, k, v = qkv.chunk(3, dim=-1)`` (or ``split``, or ``torch.chunk(qkv, 3, -1)``) splits on its
    last axis, where ``part`` is one of the names it binds; None for any other statement."""
    if not isinstance(node, ast.Assign) or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Tuple):
        return None
    if not all(isinstance(t, ast.Name) for t in node.targets[0].elts) or not isinstance(node.value, ast.Call):
        return None
    call, func = node.value, node.value.func
    if not isinstance(func, ast.Attribute) or func.attr not in SPLITS:
        return None
    args = list(call.args)
    if isinstance(func.value, ast.Name) and func.value.id == "torch":  # torch.chunk(qkv, 3, dim=-1)
        if not args or not isinstance(args[0], ast.Name):
            return None
        split, args = args[0].id, args[1:]
    elif isinstance(func.value, ast.Name):
        split = func.value.id
    else:
        return None
    dim = next((k.value for k in call.keywords if k.arg == "dim"), args[1] if len(args) > 1 else None)
    last_axis = (isinstance(dim, ast.UnaryOp) and isinstance(dim.op, ast.USub)
                 and isinstance(dim.operand, ast.Constant) and dim.operand.value == 1)
    return split if last_axis and part in {t.id for t in node.targets[0].elts if isinstance(t, ast.Name)} else None


def _binds_only(node: ast.stmt, name: str) -> bool:
    return names_bound(node) == frozenset({name})
