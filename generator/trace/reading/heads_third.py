"""Per-head tensors kept with their heads third, (B, L, h, hs) (XCiT's ``"b n (h e) -> b n h e"``, MobileViT's
patches): no captured step shows the heads in the catalogue's place, (B, h, L, hs), so nothing bound h and hs and every
step of the attention was "not checkable". Where the other steps bind the batch B, the positions L and the width C, a
(B, h, L, hs) step of shape (B, L, a, b) with a × b = C (and a ≠ L) is read with its heads second for the binding:
h = a, hs = b. Its layout then reads it as the same axes in another order (verify.py ``layout``)."""

from __future__ import annotations

import contextlib

from transformer_trace.catalogue import parse_dimension

Named = list[tuple[tuple[str, ...], tuple[int, ...]]]


def heads_read_second(named: Named, dims: dict[str, int]) -> Named:
    """``named`` (each step's named shape and captured shape) with every (B, h, L, hs) step kept heads third given its
    axes 1 and 2 swapped; the list itself where none is."""
    swapped = [(e, (shape[0], shape[2], shape[1], shape[3])) if _heads_third(e, shape, dims) else (e, shape)
               for e, shape in named]
    return swapped if swapped != named else named


def _heads_third(expressions: tuple[str, ...], shape: tuple[int, ...], dims: dict[str, int]) -> bool:
    if len(expressions) != 4 or expressions[1] != "h" or len(shape) != 4 or "C" not in dims:
        return False
    with contextlib.suppress(ValueError):
        positions = parse_dimension(expressions[2], dims)
        return shape[:2] == (dims.get("B"), positions) and shape[2] != positions and shape[2] * shape[3] == dims["C"]
    return False
