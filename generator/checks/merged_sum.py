"""The MLP's residual sum of a block that merges tokens between its two sums (token merging, ToMe: Bolya et al. 2023;
trace/reading/merged_tokens.py reads the steps after the merge with their own token count). The stream the MLP's output
is added to is no captured step: it is the attention's residual sum with pairs of similar tokens merged, each merged
token the sum (or the mean) of its pair and the others kept. So the sum is read as ``out`` − the MLP output = a merge
of the other operands' sum: every row of it either one of their rows or the sum or mean of a group of them, the groups
disjoint and covering every row (``merge_groups``, per batch item). Two bug forms follow from it: the MLP output alone
(the merged stream left out), and a merge of the sublayer outputs without the stream (the attention's residual sum
left out before the merge)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

import torch

from transformer_trace.checks.base import tolerance
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.sources import Ref, TensorSource

MERGED_CLAIM = "the MLP output plus the attention's residual sum with tokens merged (token merging)"
LARGEST_GROUP = 3  # a merged token gathers at most this many rows (ToMe merges pairs; a destination may take two)


def _rows_equal(a: torch.Tensor, b: torch.Tensor, scale: float) -> bool:
    return bool(((a - b).abs() <= tolerance() * scale).all())


def _groups_of(stream: torch.Tensor, merged: torch.Tensor) -> list[tuple[int, ...]] | None:
    """One batch item: for each row of ``merged`` the rows of ``stream`` it gathers (one: kept; several: their sum or
    mean), every row of ``stream`` in exactly one group; None where no such grouping holds."""
    scale = max(1.0, float(stream.abs().max()))
    free = list(range(stream.shape[0]))
    groups: list[tuple[int, ...]] = [() for _ in range(merged.shape[0])]
    for i, row in enumerate(merged):  # the rows kept as they were
        match = next((j for j in free if _rows_equal(row, stream[j], scale)), None)
        if match is not None:
            groups[i] = (match,)
            free.remove(match)
    for i, row in enumerate(merged):
        if groups[i]:
            continue
        found = next((group for size in range(2, LARGEST_GROUP + 1) for group in combinations(free, size)
                      if _rows_equal(row, stream[list(group)].sum(0), scale)
                      or _rows_equal(row, stream[list(group)].mean(0), scale)), None)
        if found is None:
            return None
        groups[i] = found
        free = [j for j in free if j not in found]
    return groups if not free else None


def merge_groups(stream: torch.Tensor, merged: torch.Tensor) -> list[list[tuple[int, ...]]] | None:
    """Per batch item the groups of ``stream``'s rows (B, n, C) each row of ``merged`` (B, m, C), m < n, gathers;
    None where the shapes or any item do not read as a merge."""
    if stream.dim() != 3 or merged.dim() != 3 or stream.shape[0] != merged.shape[0] or \
            stream.shape[2] != merged.shape[2] or not 0 < merged.shape[1] < stream.shape[1]:
        return None
    found = []
    for item in range(stream.shape[0]):
        groups = _groups_of(stream[item].double(), merged[item].double())
        if groups is None:
            return None
        found.append(groups)
    return found


def _merged_of(s: TensorSource, out: Ref, operands: Sequence[Ref], stream_refs: Sequence[Ref]) -> str | None:
    """Words for the merge where ``out`` minus the last operand is a merge of ``stream_refs``' sum; else None."""
    last = s.t(operands[-1])
    if s.t(out).shape != last.shape:
        return None
    stream = sum((s.t(ref) for ref in stream_refs), torch.zeros(()))
    groups = merge_groups(stream, s.t(out) - last)
    if groups is None:
        return None
    merged = sum(len(group) > 1 for group in groups[0])
    names = " + ".join(s.name(ref) for ref in stream_refs)
    return (f"{s.name(out)} − {s.name(operands[-1])} is {names} with {merged} groups of tokens merged and the other "
            f"rows kept ({stream.shape[1]} tokens to {last.shape[1]}, every batch item)")


def merged_stream_sum(s: TensorSource, out: Ref, operands: Sequence[Ref]) -> tuple[str, bool, str] | None:
    """The sum of a merging block's MLP residual, where it holds (see the module's docstring); None elsewhere."""
    if len(operands) < 2:
        return None
    said = _merged_of(s, out, operands, operands[:-1])
    return (MERGED_CLAIM, True, said) if said is not None else None


def merged_stream_left(check: Any, s: TensorSource) -> bool:
    """Whether the step and its last operand hold fewer tokens than the others (a merge between the block's sums)."""
    out, operands = s.t(check.out), [s.t(ref) for ref in check.operands]
    return (len(operands) >= 2 and out.dim() == 3 and out.shape == operands[-1].shape
            and all(o.dim() == 3 and o.shape[1] > out.shape[1] for o in operands[:-1]))


def merged_stream_left_out(check: Any, s: TensorSource) -> Fit | None:
    """The bug form: the step is the MLP output alone where the stream has more tokens (merged before the MLP)."""
    operands = check.operands
    if len(operands) < 2 or s.t(check.out).shape != s.t(operands[-1]).shape:
        return None
    if s.t(operands[0]).shape[1:2] == s.t(check.out).shape[1:2]:
        return None  # no merge: the sum's own "residual dropped" tests it
    fits = _rows_equal(s.t(check.out).double(), s.t(operands[-1]).double(), max(1.0, float(s.t(check.out).abs().max())))
    return Fit(fits, f"your {s.name(check.out)} is {s.name(operands[-1])} alone: the merged tokens of the attention's "
               "residual sum are not added to it" if fits else "not the MLP output alone")


def merged_sublayer_only(check: Any, s: TensorSource) -> Fit | None:
    """The bug form: the tokens merged are the sublayer outputs' (the attention's output) without the stream."""
    operands = check.operands
    if len(operands) < 3:
        return None
    said = _merged_of(s, check.out, operands, operands[1:-1])
    return Fit(True, f"{said}: the tokens merged are the attention's output without {s.name(operands[0])}, the "
               "residual sum left out before the merge") if said is not None else None


MERGED_FORMS = (BugForm("residual dropped", "the MLP output alone, where the stream's tokens were merged",
                        merged_stream_left_out),
                BugForm("residual dropped", "a merge of the sublayer outputs without the stream",
                        merged_sublayer_only))
