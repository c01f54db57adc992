"""The module calls a marked line's checks read, each with the attribute the statement that made it called it by
(round twenty-one's Vitgracer: ``K = self.wv(input)  # BREAKPOINT S10``, the value Linear called for the keys). K
computed with V's Linear equals V value for value, and which of the two is wrong no tensor tells; the name a student
gave the Linear does (``wv``, ``W_Q``, ``to_k``, ``query``: checks/projected_alike.py reads its letter). A call is named
only where its statement called one ``self`` attribute that is not a LayerNorm's or an activation's, read from the
source: the marked statement's own, or, for a call an unmarked statement before it made (``FED_AT``), that
statement's; a product with a parameter matrix is named by the matrix (products.py)."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

import torch

from transformer_trace.trace.child.protocol import FED_AT, ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.chunked_feeders import chunked_projections
from transformer_trace.trace.reading.einsum_products import einsum_operands, with_einsums
from transformer_trace.trace.reading.feeders import block_of, dotted_name, parsed_source, as_read
from transformer_trace.trace.reading.product_feeders import feeder_reads
from transformer_trace.trace.reading.products import PRODUCT, with_products

CALLED_AS = "called_as"  # a Linear call's attribute: the ``self`` attribute its statement called it by


def read_calls(calls: Sequence[ModuleCall], made: Sequence[torch.Tensor | None], source: str, first: int, last: int,
               traced: frozenset[int]) -> tuple[ModuleCall, ...]:
    """A hit's calls as its checks read them: those of the statements feeding it where it read their output
    (feeders.py ``as_read``; ``traced``: the statements traced back to), the products with parameter matrices it or a
    raw product before it read (products.py) and the einsums of a local with a parameter it made
    (einsum_products.py), each Linear named as its statement called it (the module docstring); a fused projection
    chunked on the statement before keeps its call where the line read one of its parts (chunked_feeders.py)."""
    found = with_products(as_read(calls, traced, chunked_projections(source, first, last)), made,
                          feeder_reads(source, first, last)[1])
    found = with_einsums(found, made, einsum_operands(source, first, last))
    return tuple(_named(call, source, first, last) for call in found)


def _named(call: ModuleCall, source: str, first: int, last: int) -> ModuleCall:
    if call.kind != ModuleKind.LINEAR or call.depth != 1 or CALLED_AS in call.attrs:
        return call
    fed = call.attrs.get(FED_AT)
    name = call.module if PRODUCT in call.attrs else _called(source, *((fed, fed) if fed is not None else
                                                                        (first, last)))
    return replace(call, attrs={**call.attrs, CALLED_AS: name}) if name is not None else call


@lru_cache(maxsize=1024)
def _called(source: str, first: int, last: int) -> str | None:
    """The one ``self`` attribute chain the statement starting at ``first`` calls, leaving out the norms and
    activations it may call around it (``self.wq(self.norm(x))``); None where it calls none or several."""
    tree = parsed_source(source)
    found = block_of(tree.body, first, max(last, first + 200)) if tree is not None else None
    if found is None:
        return None
    body, index = found
    chains = {chain for n in ast.walk(body[index]) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
              and (chain := dotted_name(n.func)) is not None and chain.startswith("self.")
              and not any(word in chain.rsplit(".", 1)[-1].lower() for word in ("norm", "act", "gelu", "relu", "drop"))}
    return chains.pop() if len(chains) == 1 else None
