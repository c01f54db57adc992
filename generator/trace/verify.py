"""Shapes and checks for traced values: the catalogue's named shapes bound from the user's own tensors, legitimate
layouts recognised, and the catalogue's claims recomputed from the captured tensors alone (no weights).

A check needs certain snapshots; when one of them was not captured the result is *not checkable* and says which.
Claims that need the model's weights (Q = x·W_q) cannot be recomputed from a trace: those snapshots are checked
through the snapshots that can see them (the heads re-join to Q, the scores are Q·Kᵀ/√hs, ...).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from generator.catalogue import parse_dimension
from generator.checks import TOLERANCE, close

# Dimensions that follow from others when a tensor did not show them directly.
DERIVED = {"hs": lambda d: d["C"] // d["h"], "h": lambda d: d["C"] // d["hs"], "N1": lambda d: d["N"] + 1, "N": lambda d: d["N1"] - 1}


class Missing(Exception):
    """A check's input snapshot was not captured (or cannot be read in the catalogue's layout)."""

    def __init__(self, label: str, why: str = "") -> None:
        super().__init__(label)
        self.label, self.why = label, why


@dataclass
class Layout:
    """How an observed tensor relates to the catalogue's named shape."""

    status: str  # "match", "layout" (same values, another legitimate arrangement), "mismatch", "unbound"
    expected: tuple[int, ...] | None
    note: str
    canonical: torch.Tensor | None  # the tensor in the catalogue's layout, for checks


def bind_dims(named: list[tuple[tuple[str, ...], tuple[int, ...]]], legend: dict[str, str]) -> dict[str, int]:
    """Named dimensions from observed shapes, in catalogue order: a tensor binds its unbound names only when its
    already-bound axes agree (so one odd layout cannot mislabel a dimension); repeated until nothing changes."""
    dims: dict[str, int] = {}
    changed = True
    while changed:
        changed = False
        for expressions, shape in named:
            if len(expressions) != len(shape):
                continue
            fresh, fits = {}, True
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
        for name, rule in DERIVED.items():
            if name in legend and name not in dims:
                try:
                    dims[name] = rule(dims)
                    changed = True
                except (KeyError, ZeroDivisionError):
                    pass
    return dims


def layout(tensor: torch.Tensor, expressions: tuple[str, ...], dims: dict[str, int], legend: dict[str, str]) -> Layout:
    try:
        expected = tuple(parse_dimension(e, dims) for e in expressions)
    except ValueError:
        unbound = sorted({name for e in expressions for name in re.findall(r"[A-Za-z_]+", e) if name != "min" and name not in dims})
        return Layout("unbound", None, f"{', '.join(unbound)} bound by no captured tensor: the shape cannot be compared", tensor)
    shape = tuple(tensor.shape)
    if shape == expected:
        return Layout("match", expected, "", tensor)
    for arrangement in _arrangements(tensor, expressions, expected, dims):
        if arrangement is not None:
            return arrangement
    return Layout("mismatch", expected, _mismatch(shape, expressions, expected, dims), None)


def _arrangements(tensor: torch.Tensor, expressions: tuple[str, ...], expected: tuple[int, ...], dims: dict[str, int]):
    shape = tuple(tensor.shape)
    names = ", ".join(expressions)
    # a batch of one written without its batch axis, or with an extra one
    if expressions and expressions[0] == "B" and dims.get("B") == 1 and shape == expected[1:]:
        yield Layout("layout", expected, "the batch axis (B = 1) is left out; read as one batch", tensor.unsqueeze(0))
    if len(shape) == len(expected) + 1 and shape[0] == 1 and shape[1:] == expected:
        yield Layout("layout", expected, "an extra leading axis of size 1; read without it", tensor.squeeze(0))
    # the same axes in another order (heads after positions, ...)
    if len(shape) == len(expected) and sorted(shape) == sorted(expected):
        for order in itertools.permutations(range(len(shape))):
            if tuple(shape[i] for i in order) == expected:
                moved = [f"{expressions[j]}" for j, i in enumerate(order) if i != j]
                return_note = f"the same dimensions in another order (axes {', '.join(moved)} placed differently); read as ({names})"
                yield Layout("layout", expected, return_note, tensor.permute(*order))
                break
    # (B, L, C) written as heads (B, h, L, hs) or (B, L, h, hs), and the other way round
    h, hs = dims.get("h"), dims.get("hs")
    if h and hs and len(expected) == 3 and expected[2] == h * hs and len(shape) == 4:
        B, L = expected[:2]
        if shape == (B, h, L, hs):
            yield Layout("layout", expected, f"already split into {h} heads (B, h, L, hs); read with the heads joined", tensor.transpose(1, 2).reshape(B, L, h * hs))
        if shape == (B, L, h, hs):
            yield Layout("layout", expected, f"split into {h} heads after the positions (B, L, h, hs); read with the heads joined", tensor.reshape(B, L, h * hs))
    if h and hs and len(expected) == 4 and expected[1] == h and expected[3] == hs and len(shape) == 3:
        B, _, L, _ = expected
        if shape == (B, L, h * hs):
            yield Layout("layout", expected, f"heads not split yet (B, L, C); read as {h} heads of {hs}", tensor.reshape(B, L, h, hs).transpose(1, 2))
        if shape == (B * h, L, hs):
            yield Layout("layout", expected, "batch and heads merged in one axis (B·h, L, hs); read as (B, h, L, hs)", tensor.reshape(B, h, L, hs))
    if len(expected) == 4 and expected[:2] == (1, 1) and shape == expected[2:]:
        yield Layout("layout", expected, "a (T, T) mask without its broadcast axes; read as (1, 1, T, T)", tensor[None, None])


def _mismatch(shape: tuple[int, ...], expressions: tuple[str, ...], expected: tuple[int, ...], dims: dict[str, int]) -> str:
    if len(shape) != len(expected):
        return f"{len(shape)} axes where the step has {len(expected)} ({', '.join(expressions)})"
    wrong = [f"axis {i} is {got}, {e} = {want}" for i, (got, e, want) in enumerate(zip(shape, expressions, expected)) if got != want]
    return "; ".join(wrong) + " (bound from your other tensors)"


# ----------------------------------------------------------------------------- checks

Get = Callable[..., torch.Tensor]  # get(number, i=0) -> the snapshot's i-th tensor in catalogue layout, float64


@dataclass(frozen=True)
class TraceCheck:
    name: str
    needs: tuple[int, ...]  # other snapshots it reads (besides its own)
    run: Callable[[Get, int, dict[str, int]], tuple[bool, str]]


def _split(x: torch.Tensor, h: int) -> torch.Tensor:
    B, L, C = x.shape
    return x.reshape(B, L, h, C // h).transpose(1, 2)  # (B, L, C) -> (B, h, L, hs)


def _join(x: torch.Tensor) -> torch.Tensor:
    B, h, L, hs = x.shape
    return x.transpose(1, 2).reshape(B, L, h * hs)  # (B, h, L, hs) -> (B, L, C)


def block_input(first: int, previous_output: int, stage: str) -> TraceCheck:
    """A block's input: at its first pass what the stage before hands over, at pass k the block's own output at pass k − 1."""
    def run(get, n, dims):
        shown = get.shown(n)
        if shown == 1:
            return close(get(n), get(first), f"the first pass's input vs {stage}")
        return close(get(n), get(previous_output, hit=shown - 1), f"pass {shown}'s input vs the block output of pass {shown - 1}")
    return TraceCheck(f"is what the previous step handed over ({stage}, or the previous pass's block output)", (first, previous_output), run)


def hit_of(source: int, hit: int, claim: str) -> TraceCheck:
    return TraceCheck(claim, (source,), lambda get, n, dims: close(get(n), get(source, hit=hit), claim))


def same_as(other: int, claim: str) -> TraceCheck:
    return TraceCheck(claim, (other,), lambda get, n, dims: close(get(n), get(other), claim))


Ref = int | tuple[int, int]  # a snapshot, or (snapshot, which of its tensors)


def _ref(get: Get, ref: Ref) -> torch.Tensor:
    return get(*ref) if isinstance(ref, tuple) else get(ref)


def _number(ref: Ref) -> int:
    return ref[0] if isinstance(ref, tuple) else ref


def scores_of(q: Ref, k: Ref, heads: bool) -> TraceCheck:
    def run(get, n, dims):
        scores = get(n)
        if heads:
            qh, kh = _ref(get, q), _ref(get, k)
        else:
            qh, kh = _split(_ref(get, q), scores.shape[1]), _split(_ref(get, k), scores.shape[1])
        hs = qh.shape[-1]
        ok, detail = close(scores, qh @ kh.transpose(-2, -1) / math.sqrt(hs), f"recomputed Q·Kᵀ/√{hs} per head")
        if not ok:
            unscaled, _ = close(scores, qh @ kh.transpose(-2, -1), "")
            if unscaled:
                detail += f"; the scores equal Q·Kᵀ without the 1/√{hs} (= {1 / math.sqrt(hs):.4f}) scaling"
        return ok, detail
    return TraceCheck("equals Q·Kᵀ / √hs, head by head", (_number(q), _number(k)), run)


def probabilities_of(scores: int | None, mask: int | None = None, causal: bool = False) -> TraceCheck:
    def run(get, n, dims):
        weights = get(n)
        sums = weights.sum(-1)
        worst = float((sums - 1).abs().max())
        negative = int((weights < 0).sum())
        ok = worst <= TOLERANCE and negative == 0
        detail = (f"{sums.numel():,} rows over the keys (last axis): a row sum is at most {worst:.1e} away from 1"
                  f"{'' if worst <= TOLERANCE else ' (NOT probability distributions)'}; {negative} negative weights")
        if not ok and weights.dim() >= 2:
            other = float((weights.sum(-2) - 1).abs().max())
            if other <= TOLERANCE:
                detail += "; it is the columns (the query axis) that sum to 1: the softmax ran over the wrong axis"
        if scores is not None:
            logits = get(scores)
            if mask is not None:
                logits = logits + get(mask)
            same, more = close(weights, torch.softmax(logits, dim=-1), "recomputed softmax over the keys" + (" of scores + mask" if mask else ""))
            ok &= same
            detail += "; " + more
        if causal:
            T = weights.shape[-1]
            above = torch.triu(torch.ones(weights.shape[-2], T, dtype=torch.bool), diagonal=1)  # keys after the query
            future = float(weights[..., above].abs().max()) if above.any() else 0.0
            ok &= future == 0.0
            detail += f"; largest weight on a future position: {future:g}"
        return ok, detail
    needs = tuple(x for x in (scores, mask) if x is not None)
    return TraceCheck("rows are probability distributions over the keys" + (" (causal)" if causal else ""), needs, run)


def context_of(probs: int, v: int, v_index: int = 0, v_full: bool = False, concat: bool = True) -> TraceCheck:
    def run(get, n, dims):
        weights = get(probs)
        values = _split(get(v), weights.shape[1]) if v_full else get(v, v_index)
        ctx = weights @ values
        return close(get(n), _join(ctx) if concat else ctx, "recomputed weights·V per head" + (", heads concatenated" if concat else ""))
    return TraceCheck("equals the attention weights · V" + (", heads concatenated" if concat else ""), (probs, v), run)


def layer_norm_of(*operands: int | tuple[int, int]) -> TraceCheck:
    """LayerNorm of the operands' sum, with the per-feature gain and bias fitted by least squares (the trace has no
    weights): passes only when every feature of the output is one affine function of the normalised sum."""
    def run(get, n, dims):
        total = sum(get(*op) if isinstance(op, tuple) else get(op) for op in operands)
        normed = F.layer_norm(total, total.shape[-1:])
        out = get(n)
        x, y = normed.reshape(-1, normed.shape[-1]), out.reshape(-1, out.shape[-1])
        if x.shape[0] < 3:
            raise Missing("", "fewer than 3 positions: a gain and a bias per feature would fit anything")
        xm, ym = x.mean(0), y.mean(0)
        var = ((x - xm) ** 2).mean(0)
        gain = ((x - xm) * (y - ym)).mean(0) / var.clamp_min(1e-12)
        bias = ym - gain * xm
        ok, detail = close(out, normed * gain + bias, f"LayerNorm of the sum, gain and bias fitted per feature (gain {float(gain.mean()):.3f} on average)")
        return ok, detail
    needs = tuple(op[0] if isinstance(op, tuple) else op for op in operands)
    name = "equals LayerNorm(input + sublayer output)" if len(operands) > 1 else "equals LayerNorm of its input"
    return TraceCheck(name, needs, run)


def sum_of(*operands: int | tuple[int, int]) -> TraceCheck:
    def run(get, n, dims):
        return close(get(n), sum(get(*op) if isinstance(op, tuple) else get(op) for op in operands), "the operands added up")
    return TraceCheck("equals the residual sum of its operands", tuple(op[0] if isinstance(op, tuple) else op for op in operands), run)


def causal_mask() -> TraceCheck:
    def run(get, n, dims):
        mask = get(n)
        T = mask.shape[-1]
        above = torch.triu(torch.ones(mask.shape[-2], T, dtype=torch.bool), diagonal=1)
        if mask.dtype == torch.bool or set(mask.unique().tolist()) <= {0.0, 1.0}:
            allowed = mask.bool() if not bool(mask.bool()[..., above].any()) else ~mask.bool()  # True = allowed, or True = hidden
            ok = bool((allowed[..., above] == 0).all()) and bool(allowed[..., ~above].all())
            return ok, f"boolean mask: allowed exactly on and below the diagonal: {ok}"
        zeros = bool((mask[..., ~above] == 0).all())
        hidden = bool((mask[..., above] <= -1e9).all())
        seen = int((mask[..., above] > -1e9).sum())
        return zeros and hidden, (f"{int((~above).sum())} entries on and below the diagonal are 0: {zeros}; {int(above.sum())} future "
                                  f"entries are −inf (or ≤ −1e9): {hidden}" + (f"; {seen} future entries stay visible" if seen else ""))
    return TraceCheck("0 on and below the diagonal, −inf above", (), run)


def ids() -> TraceCheck:
    def run(get, n, dims):
        values = get(n)
        whole = bool((values == values.round()).all()) and bool((values >= 0).all())
        return whole, f"{values.numel()} whole, non-negative token IDs: {whole}"
    return TraceCheck("token IDs are whole numbers ≥ 0", (), run)


def embedding_rows(table: int, ids_snapshot: int) -> TraceCheck:
    def run(get, n, dims):
        emb, rows, index = get(n), get(table), get(ids_snapshot).long().reshape(-1)
        R, K = rows.shape
        positions = [p for p, i in enumerate(index.tolist()) if i < R]
        if not positions:
            raise Missing("", f"no ID below {R}: the table slice shows none of the rows used")
        got = emb.reshape(-1, emb.shape[-1])[positions, :K]
        want = rows[index[positions]]
        for scale, name in ((1.0, ""), (math.sqrt(emb.shape[-1]), f" × √{emb.shape[-1]}")):
            ok, detail = close(got, want * scale, f"{len(positions)} positions vs their ID's row of the table slice{name}")
            if ok:
                return ok, detail
        return ok, detail
    return TraceCheck("each position holds its ID's row of the embedding table", (table, ids_snapshot), run)


def sinusoidal_added(before: int) -> TraceCheck:
    def run(get, n, dims):
        added = get(n) - get(before)  # (B, L, C)
        L, C = added.shape[-2:]
        pos = torch.arange(L, dtype=torch.float64)[:, None]
        i = torch.arange(C, dtype=torch.float64)[None, :]
        angle = pos / torch.pow(10000.0, (2 * torch.div(i, 2, rounding_mode="floor")) / C)
        expected = torch.where(i % 2 == 0, torch.sin(angle), torch.cos(angle)).expand_as(added)
        return close(added, expected, "added term vs sin(pos/10000^(2i/C)) on even features, cos on odd")
    return TraceCheck("the added term is the sinusoidal position encoding", (before,), run)


def slice_of(source: int, index: tuple) -> TraceCheck:
    def run(get, n, dims):
        whole = get(source)[index]
        got = get(n)
        return close(got, whole[: got.shape[0]] if got.dim() == 1 else whole, "vs the same slice of the full tensor")
    return TraceCheck("is the slice of the full tensor it names", (source,), run)


def gelu_range() -> TraceCheck:
    def run(get, n, dims):
        low = float(get(n).min())
        return low >= -0.1701, f"smallest value {low:.4f}; GELU never goes below −0.1700 (a necessary condition, no weights needed)"
    return TraceCheck("values lie in GELU's range", (), run)


@dataclass(frozen=True)
class TraceSpec:
    """What a report adds for tracing someone else's code (generator/reports/<report>/trace.py defines ``TRACE``).

    ``keyword`` and ``letter`` are how students mark its snapshots: ``# BREAKPOINT S13`` (keyword "BREAKPOINT", letter
    "S") or ``# Snapshot #13`` (keyword "SNAPSHOT", letter "#"). ``checks``: what a trace verifies beyond the catalogue's
    own checks (which also run, on the captured tensors): claims the catalogue checks with the model's weights or with
    tensors no snapshot shows, a loop's wiring from pass to pass, and diagnoses of the usual bugs. ``attention``: the
    attention-probability snapshots and the named dimensions of their query and key axes, for the explorer.
    """

    keyword: str
    letter: str
    checks: dict[int, TraceCheck]
    attention: dict[int, tuple[str, str]]
    example_size: tuple[str, ...] = ()  # `build` flags that give the bundled report the size of examples/ (benchmarks)

    def marker(self, number: int, label: str) -> str:
        """How to mark snapshot ``number`` (``label`` is the report's own, e.g. "S13" or "#13")."""
        return f"# {self.keyword.capitalize() if self.letter == '#' else self.keyword} {label}"
