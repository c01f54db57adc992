"""Raw-parameter products on the unmarked statements feeding a marked one (round twenty-one's Apzmie: ``Q =
torch.matmul(x, self.W_Q)`` above ``Q = Q.view(...).transpose(1, 2)  # BREAKPOINT S09``; ``linear1 = torch.matmul(x,
self.W1) + self.b1`` above ``gelu = self.gelu(linear1)  # BREAKPOINT S17``). No module call makes such a projection, so
the feeding statements' recorded calls (fed_calls.py) hold nothing of it, and the step was read "as the line read it"
(a head split) or by GELU's range alone. The marked line copies, besides its own, the locals and the parameters such a
statement read: its input, which the marked line still holds where nothing between rebinds it, and its matrix and
bias by attribute; the reading then finds the product among them (products.py) as a Linear that statement computed."""

from __future__ import annotations

import ast
from functools import lru_cache

from transformer_trace.trace.reading.feeders import MOST_FEEDERS, names_bound, block_of, dotted_name, parsed_source

PRODUCTS = ("matmul", "mm", "bmm", "linear")  # the functions a raw-parameter projection is written with


@lru_cache(maxsize=1024)  # a pure function of the file's text: `trace` asks once per marker
def feeder_reads(source: str | None, first: int, last: int) -> tuple[tuple[str, ...], tuple[tuple[str, int], ...]]:
    """The names and the parameter chains (each with its statement's first line) that the raw products feeding the
    statement at lines ``first``–``last`` read: the statements of its block before it that last assigned a name it
    reads from a product of a local with a ``self`` attribute, none of whose names a statement between rebinds (nor
    the product itself: ``x = x @ self.W``); ((), ()) where none does or the source does not parse."""
    tree = parsed_source(source) if source is not None else None
    found = block_of(tree.body, first, last) if tree is not None else None
    if found is None:
        return (), ()
    body, index = found
    if tree is not None and _calls_own_module(tree, body[index]):
        return (), ()
    wanted = {n.id for n in ast.walk(body[index]) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    names: dict[str, None] = {}
    chains: dict[str, int] = {}
    rebound: set[str] = set()  # the names the statements after the one looked at bind, up to the marked one
    for node in reversed(body[:index]):
        assigned = names_bound(node)
        if assigned & wanted:
            wanted -= assigned
            read, parameters = _product_reads(node)
            if parameters and not read & (rebound | assigned):
                names.update(dict.fromkeys(sorted(read)))
                chains.update({chain: node.lineno for chain in parameters if chain not in chains})
                if len(chains) >= 2 * MOST_FEEDERS:
                    break
        rebound |= assigned
        if not wanted:
            break
    return tuple(names), tuple(chains.items())


def _product_reads(node: ast.stmt) -> tuple[frozenset[str], tuple[str, ...]]:
    """The names a raw-parameter product's assignment reads, and the ``self`` attributes it passes (not calls:
    ``self.W_Q`` of ``torch.matmul(x, self.W_Q)``); ((), ()) for any other statement."""
    value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
    if value is None or not _is_product(value) or isinstance(node, ast.Assign) and (
            len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name)):
        return frozenset(), ()  # the local must be the product itself (a bias added at most), not a part of it
    functions = {id(n.func) for n in ast.walk(value) if isinstance(n, ast.Call)}
    parameters = tuple(dict.fromkeys(chain for n in ast.walk(value) if isinstance(n, ast.Attribute)
                                     and id(n) not in functions and isinstance(n.ctx, ast.Load)
                                     and (chain := dotted_name(n)) is not None and chain.startswith("self.")))
    read = frozenset(n.id for n in ast.walk(value) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                     and n.id != "self")
    return read, parameters


def _calls_own_module(tree: ast.Module, statement: ast.stmt) -> bool:
    """Whether ``statement`` calls ``self.<name>(...)`` where the file builds ``self.<name>`` from a class of the
    user's own (a bare name: ``self.xpos = XPOS(hs)``, not ``nn.GELU()``): what that module does to the product
    (RetNet's xPos rotation of K) the product reading cannot see through, so the marked step is read as before."""
    called = {chain.removeprefix("self.") for n in ast.walk(statement) if isinstance(n, ast.Call)
              and (chain := dotted_name(n.func)) is not None and chain.startswith("self.") and chain.count(".") == 1}
    return bool(called) and any(
        isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Name)
        and any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                and t.attr in called for t in n.targets) for n in ast.walk(tree))


def _is_product(value: ast.expr) -> bool:
    """Whether ``value`` is a raw product (``x @ W``, ``torch.matmul(x, W)``, ``F.linear(x, W, b)``), a bias added to
    it at most; a product split or indexed (``F.linear(x, W, b).chunk(3, dim=-1)``) is not: the local holds a part."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        return _is_product(value.left) or _is_product(value.right)
    return (isinstance(value, ast.BinOp) and isinstance(value.op, ast.MatMult)
            or isinstance(value, ast.Call) and _function(value.func) in PRODUCTS)


def _function(func: ast.expr) -> str | None:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
