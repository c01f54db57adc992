"""Shapes for traced values: the catalogue's named shapes bound from the user's own tensors, legitimate layouts
recognised (the checks themselves are the catalogue's, generator/checks.py, run by trace/reading/checking.py). What a
report adds for tracing, its ``TraceSpec``, is one of its declared parts (generator/report_parts.py)."""

from __future__ import annotations

import enum
import itertools
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from transformer_trace.catalogue import parse_dimension
from transformer_trace.checks.grouped import kv_heads
from transformer_trace.models.legend import Legend
from transformer_trace.models.recording import Role
from transformer_trace.trace.reading.heads_third import heads_read_second
from transformer_trace.trace.reading.memory_keys import memory_key_layouts
from transformer_trace.trace.reading.reduced_keys import reduced_key_layouts
from transformer_trace.trace.reading.token_grid import grid_layouts, grids_flattened

Roles = frozenset[Role]
# the declared roles a step must have for keys or values of fewer heads than the queries to be read as grouped-query
# attention (``_grouped_layouts``): any other step narrower than the catalogue names it does not fit
GROUPED_AS_IS = frozenset({Role.KEYS, Role.VALUES})


class LayoutStatus(enum.Enum):
    """How an observed shape relates to the catalogue's named one; the value is what snapshots.json writes."""

    MATCH = "match"
    LAYOUT = "layout"  # same values, another legitimate arrangement
    MISMATCH = "mismatch"
    UNBOUND = "unbound"  # some named dimension bound by no captured tensor
    ABSENT = "absent"  # the value is not a tensor a page can show (complex, meta, a string): nothing to compare

    @property
    def cell(self) -> str:
        """The page's shape row says so."""
        return {LayoutStatus.MATCH: ":material-check-circle:{ .tt-ok } matches",
                LayoutStatus.LAYOUT: ":material-check-circle:{ .tt-ok } same values, another layout",
                LayoutStatus.MISMATCH: ":material-close-circle:{ .tt-bad } DOES NOT MATCH",
                LayoutStatus.UNBOUND: "not all dimensions bound",
                LayoutStatus.ABSENT: "no tensor to compare"}[self]


@dataclass
class Layout:
    """How an observed tensor relates to the catalogue's named shape; ``unbound``: the named dimensions no captured
    tensor bound (an UNBOUND layout's)."""

    status: LayoutStatus
    expected: tuple[int, ...] | None
    note: str
    canonical: torch.Tensor | None  # the tensor in the catalogue's layout, for checks
    unbound: tuple[str, ...] = ()

    @property
    def mismatch(self) -> bool:
        return self.status is LayoutStatus.MISMATCH

    @property
    def last_position(self) -> bool:
        """Read as the last position's row alone (``_arrangements``: a (B, L, X) step without its positions axis)."""
        c, e = self.canonical, self.expected
        return (c is not None and e is not None and c.dim() == len(e) == 3 and c.shape[1] == 1 < e[1]
                and (c.shape[0], c.shape[2]) == (e[0], e[2]))


def bind_dims(named: list[tuple[tuple[str, ...], tuple[int, ...]]], legend: Legend,
              roles: Sequence[Roles] = (), one_head_each: bool = False) -> dict[str, int]:
    """Named dimensions from observed shapes, in catalogue order: a tensor binds its unbound names only when its
    already-bound axes agree (so one odd layout cannot mislabel a dimension); repeated until nothing changes. Where no
    tensor shows the batch axis B and some leave it out, the script works on one example without a batch axis: B = 1
    and those tensors bind the other names as a batch of one. Where some tensor then fits no layout, the binding started
    from each other tensor is tried too, and the one that leaves the fewest tensors unreadable wins (a legitimate layout
    captured first, heads after positions, must not bind h from the positions axis and fail the tensors after it).
    ``roles``: each shape's step's declared roles, where known (``layout``). ``one_head_each``: the run shows its
    per-head steps are one head of a batch each (a module per head), so a per-head step without its heads axis is read
    as one head before it is read as every head of one example without a batch axis."""
    dims = _bind_batch(named, legend, one_head_each)
    misfits = _misfits(named, dims, legend, roles)
    for first in dict.fromkeys(named) if misfits else ():
        candidate = _bind_batch([first, *(n for n in named if n != first)], legend, one_head_each)
        if (fewer := _misfits(named, candidate, legend, roles)) < misfits:
            dims, misfits = candidate, fewer
    return dims


def _misfits(named: list[tuple[tuple[str, ...], tuple[int, ...]]], dims: dict[str, int], legend: dict[str, str],
             roles: Sequence[Roles]) -> int:
    """How many of the shapes fit no layout under ``dims``, or cannot be read for a dimension it left unbound (shapes
    only: meta tensors, no values): a binding that leaves tensors unreadable is no better than one they misfit (a mask
    buffer of the context size must not bind T and leave every other tensor unread)."""
    return sum(layout(torch.empty(shape, device="meta"), expressions, dims, legend,
                      roles=roles[i] if i < len(roles) else frozenset()).status
               in (LayoutStatus.MISMATCH, LayoutStatus.UNBOUND) for i, (expressions, shape) in enumerate(named))


def _bind_batch(named: list[tuple[tuple[str, ...], tuple[int, ...]]], legend: Legend,
                one_head_each: bool = False) -> dict[str, int]:
    dims = _bind(named, legend)
    if (grids := grids_flattened(named)) != named and any(n not in dims for e, _ in grids if len(e) == 3 for n in e):
        named, dims = grids, _bind(grids, legend)  # tokens kept as a grid (token_grid.py) bind the token count
    # one head written without its heads axis: (B, L, hs) for (B, h, L, hs)
    headless = [(e, (shape[0], 1, *shape[1:])) if len(e) == 4 and e[1] == "h" and len(shape) == 3 else (e, shape)
                for e, shape in named]
    if one_head_each and "h" in legend and "h" not in dims and headless != named:
        dims = _bind(headless, legend)
    if "B" in legend and "B" not in dims:
        batchless = [(e, (1, *shape)) if e[:1] == ("B",) and len(shape) == len(e) - 1 else (e, shape) for e,
                     shape in named]
        if batchless != named:
            dims = _bind(batchless, legend)
    if "h" in legend and "h" not in dims and headless != named:
        dims = _bind(headless, legend)
    if "h" in legend and "h" not in dims and (third := heads_read_second(named, dims)) != named:
        dims = _bind(third, legend)  # heads kept third, (B, L, h, hs): XCiT's "b n (h e) -> b n h e"
    return dims


def _bind(named: list[tuple[tuple[str, ...], tuple[int, ...]]], legend: Legend) -> dict[str, int]:
    dims: dict[str, int] = {}
    changed = True
    while changed:
        changed = False
        for expressions, shape in named:
            shape = _tokens_unmerged(expressions, shape, dims)
            if len(expressions) != len(shape):
                continue
            fresh: dict[str, int] = {}
            fits = True
            for expression, size in zip(expressions, shape):
                if expression in legend and expression not in dims:
                    if fresh.setdefault(expression, size) != size:
                        fits = False
                    continue
                try:
                    if parse_dimension(expression, dims) != size:
                        fits = False
                except ValueError:
                    pass  # an expression of unbound names: no evidence either way
            if fits and fresh:
                dims.update(fresh)
                changed = True
            elif fits and (rooted := _rooted(expressions, shape, dims, legend)):
                dims.update(rooted)
                changed = True
            elif not fits and (last := _left_over(expressions, shape, dims, legend)):
                dims.update(last)
                changed = True
        if legend.derive_into(dims):  # sizes that follow from others (the model's relations)
            changed = True
    return dims


def _tokens_unmerged(expressions: tuple[str, ...], shape: tuple[int, ...], dims: dict[str, int]) -> tuple[int, ...]:
    """A (B, <positions>, X) step captured with its batch and positions merged in one axis, (B·L, X) — a feed-forward
    run on `x.view(-1, C)`, as Megatron-style and mixture-of-experts code does — read as (B, L, X) once B and L are
    bound, so it can bind X; any other shape as it is."""
    if len(expressions) != 3 or len(shape) not in (2, 3) or expressions[0] != "B":
        return shape
    B, L = dims.get("B"), dims.get(expressions[1])
    if len(shape) == 3:  # the last position's row with its positions axis kept, (B, 1, X): `h[:, [-1]]`
        return (B, L, shape[2]) if B and L and L > 1 and shape[:2] == (B, 1) else shape
    # or the last position's row alone, (B, X): a generation step's final norm and head on `h[:, -1]`
    return (B, L, shape[1]) if B and L and shape[0] in (B * L, B) and L > 1 else shape


def _rooted(expressions: tuple[str, ...], shape: tuple[int, ...], dims: dict[str, int],
            legend: dict[str, str]) -> dict[str, int]:
    """An axis written as a product whose one unbound name is repeated (Ch·P·P, Ch bound, seen as 192) binds it as the
    whole root of what the bound factors leave (P = √(192 / 3) = 8). Else nothing."""
    for expression, size in zip(expressions, shape):
        factors = [f.strip() for f in expression.split("·")]
        unbound = {f for f in factors if f in legend and f not in dims}
        if len(factors) < 2 or len(unbound) != 1:
            continue
        name, bound = unbound.pop(), 1
        try:
            for factor in factors:
                bound *= 1 if factor == name else parse_dimension(factor, dims)
        except ValueError:
            continue
        power = factors.count(name)
        if bound <= 0 or size % bound:
            continue
        root = round((size // bound) ** (1 / power))
        if root > 0 and root ** power == size // bound:
            return {name: root}
    return {}


def _left_over(expressions: tuple[str, ...], shape: tuple[int, ...], dims: dict[str, int],
               legend: dict[str, str]) -> dict[str, int]:
    """A tensor whose axes are in another order (heads after positions) binds its one unbound name to the one axis its
    bound names leave over: (B, h, N1, hs) seen as (1, 5, 2, 4) with B, h, N1 = 1, 2, 5 gives hs = 4. Else nothing."""
    unbound = [e for e in expressions if e in legend and e not in dims]
    if len(unbound) != 1:
        return {}
    sizes = list(shape)
    for expression in expressions:
        if expression == unbound[0]:
            continue
        try:
            size = parse_dimension(expression, dims)
        except ValueError:
            return {}
        if size not in sizes:
            return {}
        sizes.remove(size)
    return {unbound[0]: sizes[0]}


def layout(tensor: torch.Tensor, expressions: tuple[str, ...], dims: dict[str, int], legend: dict[str, str],
           first_item: bool = False, roles: Roles = frozenset()) -> Layout:
    """How ``tensor`` relates to the named shape ``expressions``; ``first_item``: the step shows the first batch item of
    its tensor (a snapshot indexed ``[0]``), so a whole batch of several is read as its first item. ``roles``: what
    the catalogue declares the step to be (``Ref.roles``): only keys or values are read as fewer heads than the
    queries."""
    if first_item and tensor.dim() == len(expressions) + 1 and tensor.shape[0] > 1:
        item = layout(tensor[0], expressions, dims, legend, roles=roles)
        if item.canonical is not None:
            return Layout(LayoutStatus.LAYOUT, item.expected,
                          f"a batch of {tensor.shape[0]}; the step shows its first item [0], as the "
                          "catalogue's page does", item.canonical)
    try:
        expected = tuple(parse_dimension(e, dims) for e in expressions)
    except ValueError:
        unbound = sorted({name for e in expressions for name in re.findall(r"[A-Za-z_]+", e)
                          if name != "min" and name not in dims})
        # not in the catalogue's layout either (checks and drawings on it are not checkable, naming the dimensions),
        # unless the unbound names only cap a corner's axes (min(V, 5)) and the tensor fits the caps:
        # a corner is what it shows
        corner = tensor if _fits_corner(tensor, expressions, dims) else None
        return Layout(LayoutStatus.UNBOUND, None,
                      f"{', '.join(unbound)} bound by no captured tensor: the shape cannot be compared",
                      corner, tuple(unbound))
    shape = tuple(tensor.shape)
    if shape == expected:
        return Layout(LayoutStatus.MATCH, expected, "", tensor)
    if expressions == ("T",) and not tensor.is_floating_point() and shape == (expected[0] + 1,):  # teacher forcing
        return Layout(LayoutStatus.LAYOUT, expected, f"the whole target, one token longer than T = {expected[0]}: the "
                      "model reads it without its last token (cut inside); read as its first T", tensor[:-1])
    for arrangement in _arrangements(tensor, expressions, expected, dims, roles):
        if arrangement is not None:
            return arrangement
    return Layout(LayoutStatus.MISMATCH, expected, _mismatch(shape, expressions, expected, dims), None)


CAP = re.compile(r"min\(\s*[A-Za-z_]\w*\s*,\s*(\d+)\s*\)")


def _fits_corner(tensor: torch.Tensor, expressions: tuple[str, ...], dims: dict[str, int]) -> bool:
    """Whether every axis of ``tensor`` fits its expression, an axis whose expression names an unbound dimension only as
    ``min(name, k)`` fitting when it is at most k (a leading corner of a tensor no other capture shows whole)."""
    if tensor.dim() != len(expressions):
        return False
    for expression, size in zip(expressions, tensor.shape):
        try:
            if parse_dimension(expression, dims) != size:
                return False
        except ValueError:
            cap = CAP.fullmatch(expression.strip())
            if cap is None or size > int(cap.group(1)):
                return False
    return True


def _arrangements(tensor: torch.Tensor, expressions: tuple[str, ...], expected: tuple[int, ...], dims: dict[str, int],
                  roles: Roles):
    shape = tuple(tensor.shape)
    names = ", ".join(expressions)
    # a batch of one written without its batch axis, or with an extra one
    if expressions and expressions[0] == "B" and dims.get("B") == 1 and shape == expected[1:]:
        yield Layout(LayoutStatus.LAYOUT, expected, "the batch axis (B = 1) is left out; read as one batch",
                     tensor.unsqueeze(0))
    if len(shape) == len(expected) + 1 and shape[0] == 1 and shape[1:] == expected:
        yield Layout(LayoutStatus.LAYOUT, expected, "an extra leading axis of size 1; read without it",
                     tensor.squeeze(0))
    if (len(shape) == len(expected) + 1 and shape[0] == dims.get("B") and shape[1:] == expected
            and (tensor.is_meta or bool((tensor == tensor[:1]).all()))):  # `pos[None].expand(B, T, C)`: lossless
        yield Layout(LayoutStatus.LAYOUT, expected, f"the same for each of the {shape[0]} batch items (expanded over "
                     "the batch); read as one", tensor[0])
    if len(expressions) == 4 and expressions[1] == "h" and dims.get("h") == 1 and shape == expected[:1] + expected[2:]:
        yield Layout(LayoutStatus.LAYOUT, expected, "one head without its heads axis; read with h = 1",
                     tensor.unsqueeze(1))
    # the same axes in another order (heads after positions, ...)
    if len(shape) == len(expected) and sorted(shape) == sorted(expected):
        for order in itertools.permutations(range(len(shape))):
            if tuple(shape[i] for i in order) == expected:
                moved = [f"{expressions[j]}" for j, i in enumerate(order) if i != j]
                return_note = (f"the same dimensions in another order (axes {', '.join(moved)} placed differently); "
                               f"read as ({names})")
                yield Layout(LayoutStatus.LAYOUT, expected, return_note, tensor.permute(*order))
                break
    # (B, L, C) written as heads (B, h, L, hs) or (B, L, h, hs), and the other way round
    h, hs = dims.get("h"), dims.get("hs")
    if h and hs and len(expected) == 3 and expected[2] == h * hs and len(shape) == 4:
        B, L = expected[:2]
        if shape == (B, h, L, hs):
            yield Layout(LayoutStatus.LAYOUT, expected,
                         f"already split into {h} heads (B, h, L, hs); read with the heads joined",
                         tensor.transpose(1, 2).reshape(B, L, h * hs))
        if shape == (B, L, h, hs):
            yield Layout(LayoutStatus.LAYOUT, expected,
                         f"split into {h} heads after the positions (B, L, h, hs); read with the heads joined",
                         tensor.reshape(B, L, h * hs))
    if (len(expressions) == 4 and expressions[1] == "h" and expressions[3] == "hs" and len(shape) == 4
            and shape[-1] != expected[-1] and h and h > 1 and expected[2] != h):
        # queries and keys of a head size of their own, other than C/h: multi-head latent attention (DeepSeek-V3)
        # joins a rotary part to each head's 8 features; read as they are, their own size the checks' √hs
        if shape[:3] == expected[:3]:
            yield Layout(LayoutStatus.LAYOUT, expected, f"heads of {shape[-1]} features, a head size of their own "
                         f"(C/h = {expected[-1]}); read as ({names}) with that size", tensor)
        if shape[:3] == (expected[0], expected[2], h):
            yield Layout(LayoutStatus.LAYOUT, expected, f"split into {h} heads after the positions, of {shape[-1]} "
                         f"features, a head size of their own (C/h = {expected[-1]}); read as ({names}) with that size",
                         tensor.transpose(1, 2))
    yield from _grouped_layouts(tensor, expressions, expected, h, hs, roles)
    if h and hs and len(expected) == 4 and expected[1] == h and expected[3] == hs and len(shape) == 3:
        B, _, L, _ = expected
        if shape == (B, L, h * hs):
            yield Layout(LayoutStatus.LAYOUT, expected, f"heads not split yet (B, L, C); read as {h} heads of {hs}",
                         tensor.reshape(B, L, h, hs).transpose(1, 2))
    if h and h > 1 and len(expected) == 4 and expected[1] == h and shape == (expected[0] * h, *expected[2:]):
        axes = ", ".join(expressions[2:])
        yield Layout(LayoutStatus.LAYOUT, expected,
                     f"batch and heads merged in one axis (B·h, {axes}); read as ({names})", tensor.reshape(expected))
    if len(expected) == 3 and expressions[0] == "B" and expected[1] > 1:
        yield from _positions_axis(tensor, expressions, expected)
    if (expressions == ("B", "N", "C") and len(shape) == 4 and shape[:2] == (expected[0], expected[2])
            and shape[2] * shape[3] == expected[1]):  # the patch convolution's output, before flatten(2).transpose
        yield Layout(LayoutStatus.LAYOUT, expected, f"the patch grid as the convolution wrote it (B, C, {shape[2]}, "
                     f"{shape[3]}); read with the grid flattened row by row, as (B, N, C)",
                     tensor.flatten(2).transpose(1, 2))
    if len(expected) == 4 and expected[:2] == (1, 1):
        yield from _mask_layouts(tensor, expected, dims)
    if (split := _split_axes(shape, expected)) is not None:
        # three `unfold`s leave (B, 1, H/P, W/P, Ch, P, P) for (B, N, Ch, P, P): the same values, the grid unmerged
        yield Layout(LayoutStatus.LAYOUT, expected, f"the same values with axes split further ({split}); read with "
                     f"them merged in order, as ({names})", tensor.reshape(expected))
    if (len(expressions) == 4 and expressions[:2] == ("B", "h") and expected[0] > 1 and len(shape) == 2
            and shape[0] == expected[2] and (shape[1] == expected[3] or (expected[1] * expected[3]) % shape[1] == 0)):
        # `for item in x: for head in range(heads): q = q_maps[head](item[:, head * d: (head + 1) * d])`
        yield Layout(LayoutStatus.UNBOUND, None, f"one batch item's {shape} per hit, of the {expected[0]} items "
                     "(attention written as loops over the items, and the heads: a hit per item and head); the whole "
                     f"({names}) is never one tensor, so it is not compared", None)


def _grouped_layouts(tensor: torch.Tensor, expressions: tuple[str, ...], expected: tuple[int, ...], h: int | None,
                     hs: int | None, roles: Roles):
    """Keys or values of fewer heads than the queries (grouped-query or multi-query attention, checks/grouped.py):
    whole, (B, L, h_kv·hs) for (B, L, C), one fused projection ((h + 2·h_kv)·hs for 3·C), or per head before their
    repeat, (B, h_kv, L, hs) for (B, h, L, hs), also with the heads after the positions or the last two axes swapped (K
    kept for the product); read as they are (h_kv heads), the checks repeating them to the query heads in the order
    that fits. Only a step the catalogue declares keys or values (``roles``; the fused projection: its queries, keys
    and values) is read so: a narrower step of any other (a feed-forward's input sliced) does not fit. Keys and values
    at fewer positions than the queries (reduced_keys.py) or more (a memory before them, memory_keys.py), and their
    scores, are read as they are too."""
    for note, read in (*reduced_key_layouts(tensor, expressions, expected, roles),
                       *memory_key_layouts(tensor, expressions, expected, roles)):
        yield Layout(LayoutStatus.LAYOUT, expected, note, read)
    shape = tuple(tensor.shape)
    if not h or not hs or len(shape) != len(expected):
        return
    groups = kv_heads(tensor, h, hs)
    grouped = bool(roles & GROUPED_AS_IS)
    if grouped and len(shape) == 3 and groups and expressions[-1] == "C" and shape[:2] == expected[:2]:
        yield Layout(LayoutStatus.LAYOUT, expected, f"keys or values {shape[-1]} wide, grouped-query attention: "
                     f"{groups} key/value head{'s' if groups > 1 else ''} of {hs}, fewer than the {h} query heads; "
                     "read as they are", tensor)
    fused = (shape[-1] - h * hs) // (2 * hs) if len(shape) == 3 and shape[-1] > h * hs else 0
    if (Role.QUERIES_KEYS_VALUES in roles and expressions[-1] == "3·C" and shape[:2] == expected[:2]
            and 0 < fused < h and h % fused == 0
            and shape[-1] == (h + 2 * fused) * hs):  # one projection for q, k and v: Gemma's qkv_proj
        yield Layout(LayoutStatus.LAYOUT, expected, f"q, k and v side by side, {shape[-1]} = ({h} + 2·{fused})·{hs} "
                     f"wide: grouped-query attention, {fused} key/value head{'s' if fused > 1 else ''} for the {h} "
                     "query heads; read as it is", tensor)
    wider = shape[-1] - 3 * h * hs if len(shape) == 3 else 0
    if (Role.QUERIES_KEYS_VALUES in roles and expressions[-1] == "3·C" and shape[:2] == expected[:2]
            and wider > 0 and wider % hs == 0):  # one Linear for q, k, v and more: a parallel block's MLP input
        yield Layout(LayoutStatus.LAYOUT, expected, f"q, k and v side by side in its first 3·C = {3 * h * hs} "
                     f"columns, {wider} more after them (one projection giving another sublayer's input too: a "
                     "parallel block's MLP hidden layer); read as it is", tensor)
    if not grouped or len(shape) != 4 or expressions[1] != "h" or expressions[3] != "hs":
        return
    B, _, L, _ = expected
    for arranged, how in ((tensor, ""), (tensor.transpose(1, 2), ", heads after the positions"),
                          (tensor.transpose(-2, -1), ", the last two axes swapped")):
        if (arranged.shape[0], tuple(arranged.shape[2:])) == (B, (L, hs)) and (groups := kv_heads(arranged, h, hs)):
            yield Layout(LayoutStatus.LAYOUT, expected, f"grouped-query attention: {groups} key/value head"
                         f"{'s' if groups > 1 else ''} of {hs}{how}, fewer than the {h} query heads, before their "
                         "repeat; read as they are", arranged)
            return


def _positions_axis(tensor: torch.Tensor, expressions: tuple[str, ...],
                    expected: tuple[int, ...]) -> Iterator[Layout]:
    """A (B, L, X) step without an axis of its own for the positions: merged with the batch, (B·L, X), a view the
    script made; or left out, (B, X), the last position only (verify.py ``Layout.last_position``); or split in two, a
    grid of tokens (B, H', W', X) (token_grid.py)."""
    shape, names = tuple(tensor.shape), ", ".join(expressions)
    if shape == (expected[0] * expected[1], expected[2]):
        yield Layout(LayoutStatus.LAYOUT, expected, f"batch and positions merged in one axis (B·{expressions[1]}, "
                     f"{expressions[2]}), a view the script made; read as ({names})", tensor.reshape(expected))
    if shape == (expected[0], 1, expected[2]):
        yield Layout(LayoutStatus.LAYOUT, expected, f"the last position only, its {expressions[1]} axis kept at 1 "
                     f"(B, 1, {expressions[2]}): a generation step's final norm and head on `h[:, [-1]]`; read as that "
                     f"position's row of ({names}), every step it is checked against read at that position too",
                     tensor)
    if shape == (expected[0], expected[2]):
        yield Layout(LayoutStatus.LAYOUT, expected, f"the last position only, its {expressions[1]} axis left out "
                     f"(B, {expressions[2]}): a generation step's final norm and head on `h[:, -1]`; read as that "
                     f"position's row of ({names}), every step it is checked against read at that position too",
                     tensor.unsqueeze(1))
    for note, read in grid_layouts(tensor, expressions, expected):
        yield Layout(LayoutStatus.LAYOUT, expected, note, read)


def _split_axes(shape: tuple[int, ...], expected: tuple[int, ...]) -> str | None:
    """Where each expected axis is the product of consecutive axes of ``shape`` (a view that split some of them, axes
    of size 1 anywhere), the groups ("1·4·4 for 16, ..."); else None. A reshape then reads the same values in order."""
    if len(shape) <= len(expected) or not expected:
        return None
    groups: list[list[int]] = []
    at = 0
    for size in expected:
        group = list(shape[at:at + 1])
        at += 1
        while math.prod(group) < size and at < len(shape):
            group.append(shape[at])
            at += 1
        if math.prod(group) != size:
            return None
        groups.append(group)
    if not groups or any(size != 1 for size in shape[at:]):
        return None
    groups[-1] += shape[at:]  # trailing axes of size 1
    return ", ".join("·".join(map(str, group)) for group in groups if len(group) > 1) or None


def _mask_layouts(tensor: torch.Tensor, expected: tuple[int, ...], dims: dict[str, int]):
    """A (1, 1, T, T) mask as scripts write it: without its broadcast axes, one per batch item ((1, T, T), (B, T, T),
    (B, 1, T, T): read as (B, 1, T, T), broadcast over the heads), or a buffer of the context size of which the
    first T×T is used (``bias[:, :, :T, :T]``)."""
    shape, (T, T2) = tuple(tensor.shape), expected[2:]
    B = dims.get("B")
    if (B and shape == (B, T) and not tensor.is_floating_point() and tensor.dtype != torch.bool
            and bool((tensor >= 0).all())):
        # d2l's masked_softmax: valid lengths per query, key j seen by query i where j < valid_len[i]
        seen = torch.arange(T2)[None, None, None, :] < tensor[:, None, :, None]
        yield Layout(LayoutStatus.LAYOUT, expected, f"valid lengths per batch item and query (B, T) = {shape} (key j "
                     "is seen where j < the query's length); read as a boolean (B, 1, T, T) mask, True = allowed",
                     seen)
    if shape == (T, T2):
        yield Layout(LayoutStatus.LAYOUT, expected, "a (T, T) mask without its broadcast axes; read as (1, 1, T, T)",
                     tensor[None, None])
    batch = {1, dims.get("B", 1)}
    h = dims.get("h")
    if B and h and h > 1 and shape == (B * h, T, T2):  # nn.MultiheadAttention's 3-D attn_mask: (B·h, T, T)
        yield Layout(LayoutStatus.LAYOUT, expected, f"a mask per batch item and head with the heads folded into the "
                     f"batch axis (B·h = {B * h}, T, T); read as (B, h, T, T)", tensor.reshape(B, h, T, T2))
    if len(shape) == 3 and shape[0] in batch and shape[1:] == (T, T2):
        yield Layout(LayoutStatus.LAYOUT, expected,
                     f"a mask per batch item ({shape[0]}, T, T); read as ({shape[0]}, 1, T, T), "
                     "the same for every head", tensor[:, None])
    if len(shape) == 4 and shape[0] in batch and shape[0] > 1 and shape[1] == 1 and shape[2:] == (T, T2):
        yield Layout(LayoutStatus.LAYOUT, expected,
                     f"a mask per batch item ({shape[0]}, 1, T, T), the same for every head", tensor)
    if len(shape) == 4 and shape[2:] == (1, 1) and shape[0] == shape[1] > 1 and (shape[0] == T or shape[0] in
                                                                                 dims.values()):
        # sequence-first scores (T, T, B, h), einsum's 'ijbh': the mask's query and key axes first, broadcast after
        yield Layout(LayoutStatus.LAYOUT, (1, 1, *shape[:2]), f"a sequence-first ({shape[0]}, {shape[1]}, 1, 1) mask, "
                     "its query and key axes first and broadcast over the batch and heads axes after them (scores "
                     f"laid out (T, T, B, h)); read as (1, 1, {shape[0]}, {shape[1]})", tensor.permute(2, 3, 0, 1))
    if len(shape) in (2, 4) and shape[:-2] == (1, 1)[:len(shape) - 2] and shape[-2] == T == T2 < shape[-1]:
        yield Layout(LayoutStatus.LAYOUT, expected, f"a mask of the {T} queries over {shape[-1]} keys, "
                     f"{shape[-1] - T} earlier positions (a memory) before the queries' own; read as (1, 1, T, "
                     f"{shape[-1]})", tensor.reshape(1, 1, T, shape[-1]))
    if len(shape) == 4 and shape[:2] == (1, 1) and shape[2] == shape[3] > T == T2:
        yield Layout(LayoutStatus.LAYOUT, expected,
                     f"a mask buffer of the context size ({shape[2]}×{shape[3]}) of which the "
                     f"first {T}×{T} is used (bias[:, :, :T, :T]); read as that corner", tensor[:, :, :T, :T])


def _mismatch(shape: tuple[int, ...], expressions: tuple[str, ...], expected: tuple[int, ...],
              dims: dict[str, int]) -> str:
    if len(shape) != len(expected):
        return f"{len(shape)} axes where the step has {len(expected)} ({', '.join(expressions)})"
    wrong = [f"axis {i} is {got}, {e} = {want}" for i,
             (got, e, want) in enumerate(zip(shape, expressions, expected)) if got != want]
    return "; ".join(wrong) + " (bound from your other tensors)"

