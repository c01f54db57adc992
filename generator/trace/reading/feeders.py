"""The unmarked statements that feed a marked one: where a marked line reads a local that an earlier, unmarked
statement of the same block assigned from a call (``key = self.key(query)`` above ``key = key.view(...)  # BREAKPOINT
S10``), the module calls that statement made are what the marked line's checks need (the projection's weights and its
input: K projected from another input than Q and V is an affine map of the block's input all the same, so no
tensor-only test sees it). The child records the calls of these statements (fed_calls.py ``Feeding``) and hands them
to the marked statement's next hit, as if the marked line had made them, copied only where ``as_read`` can keep them
(fed_calls.py applies its rule to the live tensors: a change to the rule here is made there too); the reading reads
them as any call of the line, where its output is the step's tensor."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import torch

from transformer_trace.trace.child.protocol import FED_AT, ModuleKind

if TYPE_CHECKING:  # pragma: no cover (capture.py reads the feeding statements from here)
    from transformer_trace.trace.reading.capture import ModuleCall

MOST_FEEDERS = 3  # per marked statement: the statements assigning the locals it reads, nearest first
MOST_TRACED_BACK = 2  # per marked statement: the projections found further back, through what the feeders read


def feeding_statements(source: str, first: int, last: int) -> list[tuple[int, int]]:
    """The (first, last) lines of each unmarked statement before the one at lines ``first``–``last`` in its block that
    last assigned, from a call, a name the marked statement reads, then the projections traced back to
    (``traced_back``); [] where the source does not parse."""
    direct = _feeding_statements(source, first, last)
    return [*direct, *(span for span in _traced_back(source, first, last) if span not in direct)]


def traced_back(source: str, first: int, last: int) -> frozenset[int]:
    """The first lines of the statements ``feeding_statements`` traced back to: a module call's output assigned as it is
    (``xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)``) that reaches the marked statement only through others
    (a view, a rotary embedding, a key-value cache written in place and read back: ``self.cache_v[:B, s:e] = xv``),
    followed back through the names and module attributes each statement on the way reads. The marked line's tensor
    may be that output rearranged, so its projection's weights and input are the step's (feeders.py ``as_read``)."""
    return frozenset(span[0] for span in _traced_back(source, first, last))


@lru_cache(maxsize=1024)  # a pure function of the file's text: `trace` asks once per marker, a benchmark per run
def _feeding_statements(source: str, first: int, last: int) -> tuple[tuple[int, int], ...]:
    tree = parsed_source(source)
    found = block_of(tree.body, first, last) if tree is not None else None
    if found is None:
        return ()
    body, index = found
    marked = body[index]
    wanted = {n.id for n in ast.walk(marked) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    feeders: list[tuple[int, int]] = []
    for node in _before(tree.body if tree is not None else [], body, index):
        assigned = names_bound(node)
        if not assigned & wanted:
            continue
        wanted -= assigned
        if (isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None
                and any(isinstance(n, ast.Call) for n in ast.walk(node.value))):
            feeders.append((node.lineno, node.end_lineno or node.lineno))
        if not wanted or len(feeders) == MOST_FEEDERS:
            break
    return tuple(feeders)


def _before(top: list[ast.stmt], body: list[ast.stmt], index: int) -> Iterator[ast.stmt]:
    """The statements that ran before ``body[index]``, nearest first: those of its own block, then, where that block is
    a branch of an ``if``, ``with`` or ``try`` (``else: return (x_cls + x_distill) / 2`` below ``x_cls =
    self.head(x[:, 0])``: round twenty's DeiT), those before that statement in the block holding it, outwards; never
    past a function (another scope) nor a loop (whose body's later statements ran before it too)."""
    yield from reversed(body[:index])
    outer = _holding(top, body)
    while outer is not None:
        block, position = outer
        if not isinstance(block[position], (ast.If, ast.With, ast.AsyncWith, ast.Try)):
            return
        yield from reversed(block[:position])
        outer = _holding(top, block)


def _holding(top: list[ast.stmt], body: list[ast.stmt]) -> tuple[list[ast.stmt], int] | None:
    """The block and index of the compound statement one of whose bodies is ``body``; None at the top."""
    for block in _blocks(top):
        for position, node in enumerate(block):
            if any(inner is body for inner in _bodies(node)):
                return block, position
    return None


def _blocks(top: list[ast.stmt]) -> Iterator[list[ast.stmt]]:
    yield top
    for node in top:
        for inner in _bodies(node):
            yield from _blocks(inner)


@lru_cache(maxsize=1024)
def _traced_back(source: str, first: int, last: int) -> tuple[tuple[int, int], ...]:
    tree = parsed_source(source)
    found = block_of(tree.body, first, last) if tree is not None else None
    if found is None:
        return ()
    body, index = found
    wanted, spans = _read(body[index]), []
    for node in reversed(body[:index]):
        written = _written(node)
        if not written & wanted:
            continue
        wanted = (wanted - names_bound(node)) | _read(node)  # a name bound anew is read from here on, not before
        if projects(node):
            spans.append((node.lineno, node.end_lineno or node.lineno))
            if len(spans) == MOST_TRACED_BACK:
                break
    return tuple(spans)


def dotted_name(node: ast.expr) -> str | None:
    """``self.cache_v`` for an attribute chain on a name; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) and parts else None


@lru_cache(maxsize=4096)
def _read(node: ast.stmt) -> frozenset[str]:
    """The names and module attributes (``self.cache_v``) a statement reads."""
    found = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return frozenset(found | {d for n in ast.walk(node) if isinstance(n, ast.Attribute) and (d := dotted_name(n))})


@lru_cache(maxsize=4096)
def _written(node: ast.stmt) -> frozenset[str]:
    """The names a statement binds and the module attributes it writes, whole or in place (``self.cache_v[:B] = x``)."""
    targets = list(getattr(node, "targets", ()))
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets.append(node.target)
    found = set(names_bound(node))
    for target in targets:
        for part in ast.walk(target):
            base = part.value if isinstance(part, ast.Subscript) else part
            if isinstance(base, ast.Attribute) and (dotted := dotted_name(base)) is not None:
                found.add(dotted)
    return frozenset(found)


def projects(node: ast.stmt) -> bool:
    """An assignment of module calls' outputs as they are: ``v = self.wv(x)``, or a tuple of such calls; or of one
    output of a module returning several (``src2 = self.self_attn(q, k, value=src)[0]``: nn.MultiheadAttention's, whose
    query, key and value arguments attention_sources.py compares with the streams they belong to)."""
    value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
    if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant):
        value = value.value
    calls = value.elts if isinstance(value, ast.Tuple) else [value]
    return bool(calls) and all(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                               and isinstance(c.func.value, ast.Name) and c.func.value.id == "self" for c in calls)


@lru_cache(maxsize=4096)
def names_bound(node: ast.stmt) -> frozenset[str]:
    """The names a statement of the block binds, each statement of a parsed file walked once (every marked line walks
    back through its block: a flat script of 20 marked lines walked its statements ~240 times, 13 ms of the parent's
    time); a function or class binds its own name only (what its body assigns is its own scope's)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return frozenset({node.name})
    return frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))


@lru_cache(maxsize=8)
def parsed_source(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def block_of(body: list[ast.stmt], first: int, last: int) -> tuple[list[ast.stmt], int] | None:
    """The statement list holding the simple statement that starts at ``first`` and ends by ``last``, and its index."""
    for index, node in enumerate(body):
        if node.lineno == first and (node.end_lineno or first) <= last and not _compound(node):
            return body, index
        if node.lineno <= first <= (node.end_lineno or node.lineno):
            for inner in _bodies(node):
                found = block_of(inner, first, last)
                if found is not None:
                    return found
    return None


def _compound(node: ast.stmt) -> bool:
    return any(True for _ in _bodies(node))


def _bodies(node: ast.stmt) -> Iterator[list[ast.stmt]]:
    for name in ("body", "orelse", "finalbody"):
        inner = getattr(node, name, None)
        if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
            yield inner
    for handler in getattr(node, "handlers", ()):
        yield handler.body
    for case in getattr(node, "cases", ()):
        yield case.body


def as_read(calls: Sequence[ModuleCall], traced: frozenset[int] = frozenset(),
            chunked: frozenset[int] = frozenset()) -> tuple[ModuleCall, ...]:
    """The calls of a marked line's hit, those its feeding statements made kept only where the line read the call's
    output as it is (a local equal to it: ``key = self.key(x)``, then ``key.view(...)``); one whose output the feeding
    statement changed before the line read it (``qkv = rearrange(self.qkv(x), "b n (h d qkv) -> ...")``) says nothing
    the line's own locals do not say better, and is left out. A call of a statement traced back to (``traced``: its
    first lines, ``traced_back``) is kept where a local the line read holds exactly its output's values, rearranged
    (the V projection split into heads through a cache): its weights and input are the step's; and an attention
    module's, whatever became of its output (``_attention_traced_back``). A call of a statement whose output the line's
    feeding statement split on its last axis (``chunked``: chunked_feeders.py) is kept where a local holds one of its
    parts exactly: the fused projection the line's q, k or v is a part of."""
    read = [t for c in calls if c.kind == ModuleKind.LOCAL for t in c.outputs if t is not None]
    return tuple(call for call in calls if call.attrs.get(FED_AT) is None or _attention_traced_back(call, traced)
                 or any(output is not None and any(output.shape == t.shape and bool(torch.equal(output, t))
                                                   or call.attrs.get(FED_AT) in traced and _rearranged(output, t)
                                                   or call.attrs.get(FED_AT) in chunked and holds_a_part(output, t)
                                                   for t in read)
                        for output in call.outputs))


def holds_a_part(output: torch.Tensor, read: torch.Tensor) -> bool:
    """Whether ``read`` is exactly one of the equal parts ``output`` splits into on its last axis (``q`` of ``q, k, v =
    qkv.chunk(3, dim=-1)``), two parts or more; or such a part rearranged (``q = q.view(B, N, h, hs)``, a transpose,
    on statements between the chunk and the line, chunked_feeders.py): its values, sorted, one part's."""
    if output.dim() == 0 or read.dtype != output.dtype or output.numel() == 0 or read.numel() == 0:
        return False
    rows, whole = output.numel() // output.shape[-1], output.shape[-1]
    if read.numel() % rows:
        return False
    width = read.numel() // rows
    if width == 0 or whole % width or whole == width:
        return False
    if read.shape[:output.dim() - 1] == output.shape[:-1]:  # the part as it is, or its last axis viewed as several
        flat = read.flatten(output.dim() - 1) if read.dim() >= output.dim() else None
        if flat is not None and flat.shape == output[..., :width].shape \
                and any(bool(torch.equal(output[..., i:i + width], flat)) for i in range(0, whole, width)):
            return True
    return any(_rearranged(output[..., i:i + width], read) for i in range(0, whole, width))


def _attention_traced_back(call: ModuleCall, traced: frozenset[int]) -> bool:
    """An attention module a statement traced back to called (``src2 = self.attn(q, k, value=src)[0]`` above the sum a
    post-norm line normalises): what it was given is the step's evidence of which streams fed it, whatever the line
    made of its output (attention_sources.py)."""
    return call.kind == ModuleKind.MULTIHEAD_ATTENTION and call.depth == 1 and call.attrs.get(FED_AT) in traced


def _rearranged(output: torch.Tensor, read: torch.Tensor) -> bool:
    """Whether ``read`` holds exactly ``output``'s values in another layout (not a constant tensor, which any holds)."""
    if output.numel() != read.numel() or output.numel() < 2 or output.dtype != read.dtype:
        return False
    values = output.flatten().sort().values
    return bool(values[0] != values[-1]) and bool(torch.equal(values, read.flatten().sort().values))
