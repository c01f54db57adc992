"""The attention's output projection read with the heads it merges: where the context per head (B, h, T, hs) is
captured and the projection's input comes from the call on the marked line, that input must be those heads merged
back, ``ctx.transpose(1, 2).reshape(B, T, h·hs)``. The Linear alone would pass on any input it was given, so a merge
that never moved the heads axis back (``ctx.reshape(B, T, C)``: every row a mix of positions) went unseen. Where the
input is neither merge, the form is one this check does not know: unrecognised, never red."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from transformer_trace.checks.base import close, linear
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.checks.values import LinearOf
from transformer_trace.sources import Ref, TensorSource


def merged(heads: torch.Tensor) -> torch.Tensor:
    """(B, h, T, hs) -> (B, T, h·hs): the heads side by side at each position."""
    return heads.transpose(1, 2).reshape(heads.shape[0], heads.shape[2], -1)


def unmoved_merges(heads: torch.Tensor) -> dict[str, torch.Tensor]:
    """(B, h, T, hs) reshaped straight to a stream's layout, the heads axis never moved back, each read batch-first
    (B, T, h·hs) as the run reads the step: by the layout reshaped to, the catalogue's (B, T, C) or a sequence-first
    stream's (T, B, C) (which layout the run's stream has, the step's reading already decided; the other merge is a
    bug of its own all the same)."""
    B, H, T, hs = heads.shape
    return {"(B, T, C)": heads.reshape(B, T, H * hs),
            "(T, B, C), the sequence-first stream's layout": heads.reshape(T, B, H * hs).transpose(0, 1)}


def split_in_place(check: Any, s: TensorSource) -> Fit | None:
    """The head split's bug form (checks/attention.py HeadsRejoin): each per-head tensor the full projection
    (B, L, C) reshaped straight to (B, h, L, hs), no transpose."""
    worst = []
    for h_ref, f_ref in zip(check.heads, check.full):
        h = s.t(h_ref)
        fits, detail = close(h, s.t(f_ref).reshape(h.shape), f"{s.name(h_ref)} vs {s.name(f_ref)} reshaped to "
                             "(B, h, L, hs) without the transpose")
        if fits:
            return Fit(True, f"the heads were split without moving the heads axis: your {s.name(h_ref)} is "
                             f"{s.name(f_ref)} reshaped straight to (B, h, L, hs) ({detail})")
        worst.append(detail)
    return Fit(False, "; ".join(worst)) if worst else None


def context_merged_in_place(check: Any, s: TensorSource) -> Fit | None:
    """The attention's context, (weights·V) of shape (B, h, T, hs), reshaped straight to the stream's layout, the
    heads axis not moved back first (a bug form of checks/attention.py's context check)."""
    detail = ""
    for target, unmoved in unmoved_merges(check.per_head(s, s.t(check.probs))).items():
        fits, detail = close(s.t(check.out), unmoved, f"vs (weights·V) reshaped from (B, h, T, hs) to {target} "
                             "without the transpose")
        if fits:
            return Fit(True, f"the heads were merged without moving the heads axis back: your {s.name(check.out)} "
                             f"is (weights·V) of shape (B, h, T, hs) reshaped straight to {target} ({detail})")
    return Fit(False, detail)


# the token orders a merge may have run in: the catalogue's, and a run's that keeps the class token last (its steps are
# read with it moved first, trace/reading/run_layout.py, but the script reshaped its own order)
MERGE_ORDERS = {0: "", -1: " (in the script's own token order, the class token last)"}


def _merged_in_place(check: Any, s: TensorSource) -> Fit | None:
    if check.heads is None or not s.has(check.heads):
        return None
    heads, given = s.t(check.heads), s.t(check.x)
    if heads.dim() != 4 or given.numel() != heads.numel() or given.dim() < 2:
        return None
    for shift, order in MERGE_ORDERS.items():
        for target, unmoved in unmoved_merges(heads.roll(shift, dims=2)).items():
            fits, detail = close(given.roll(shift, dims=1), unmoved.reshape(given.shape), f"{s.name(check.x)} vs "
                                 f"{s.name(check.heads)} reshaped to {target} without moving the heads axis{order}")
            if fits:
                return Fit(True, f"the heads were merged without moving the axis back: the input of "
                                 f"{s.name(check.module)} is {s.name(check.heads)} (B, h, T, hs) reshaped straight to "
                                 f"{target}, so each row mixes positions of one head instead of holding every head at "
                                 f"one position ({detail})")
    return Fit(False, "nor is its input the heads reshaped without moving their axis")


def _projection_of_unmoved(check: Any, s: TensorSource) -> Fit | None:
    """The step is the projection of the heads reshaped without moving their axis back (where its input is no
    snapshot's, it is read as the heads merged back: trace/reading/functional_weights.py)."""
    if check.heads is None or not s.has(check.heads) or s.t(check.heads).dim() != 4:
        return None
    detail = ""
    for target, unmoved in unmoved_merges(s.t(check.heads)).items():
        fits, detail = close(s.t(check.out), linear(s, check.module, unmoved), f"vs {s.name(check.module)} applied "
                             f"to {s.name(check.heads)} reshaped to {target} without moving the heads axis")
        if fits:
            return Fit(True, f"the heads were merged without moving the axis back: your {s.name(check.out)} is "
                             f"{s.name(check.module)} applied to {s.name(check.heads)} (B, h, T, hs) reshaped straight "
                             f"to {target}, so each row mixes positions of one head instead of holding every head at "
                             f"one position ({detail})")
    return Fit(False, detail)


@dataclass(frozen=True, kw_only=True)
class ProjectionOfHeads(LinearOf):
    """``out`` is ``module`` applied to its input, and that input is ``heads`` merged (where both are known)."""
    CLAIM = "is the output projection of the heads merged"

    OPTIONAL = (("heads",),)  # without the context per head: the projection alone
    BUG_FORMS = (BugForm("heads merged without moving the axis back", "the projection's input vs the heads reshaped "
                         "without the transpose", _merged_in_place),
                 BugForm("heads merged without moving the axis back", "the step vs the projection of the heads "
                         "reshaped without the transpose", _projection_of_unmoved))

    heads: Ref | None = None

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        claim, passed, detail = super().verify(s)
        if not passed or self.heads is None:
            return claim, passed, detail
        heads, given = s.t(self.heads), s.t(self.x)
        if heads.dim() == 4 and heads.shape[1] == 1 and given.numel() > heads.numel():
            return _one_of_the_heads(claim, detail, heads, given, s.name(self.heads))
        if heads.dim() != 4 or given.numel() != heads.numel():
            return claim, passed, detail
        together, more = close(given, merged(heads).reshape(given.shape),
                               f"its input vs {s.name(self.heads)} with the heads merged back")
        if together:
            return f"{claim}, the heads of {s.name(self.heads)} merged back", True, f"{detail}; {more}"
        return f"{claim}, the heads of {s.name(self.heads)} merged back", False, f"{detail}; but {more}"


def _one_of_the_heads(claim: str, detail: str, head: torch.Tensor, given: torch.Tensor,
                      name: str) -> tuple[str, bool, str]:
    """One head's context captured (a module per head, each with its own (B, T, hs): the heads joined by ``torch.cat``
    on the projection's line): the projection's input is heads side by side, that head one of them."""
    width = head.shape[-1]
    if given.dim() != 3 or given.shape[-1] % width or given.shape[:2] != (head.shape[0], head.shape[2]):
        return claim, True, detail  # another layout: the projection alone
    slices = given.split(width, dim=-1)
    found = [k for k, part in enumerate(slices) if close(part, head[:, 0], "")[0]]
    said = f"{claim}, the heads side by side, one of them the context of {name}"
    if found:
        _, more = close(slices[found[0]], head[:, 0], f"its input's slice {found[0]} of {len(slices)} vs {name}")
        return said, True, f"{detail}; {more}"
    nearest = min(range(len(slices)), key=lambda k: float((slices[k] - head[:, 0]).abs().max()))
    _, more = close(slices[nearest], head[:, 0], f"the nearest of its input's {len(slices)} head slices vs {name}")
    return said, False, f"{detail}; but {more}"
