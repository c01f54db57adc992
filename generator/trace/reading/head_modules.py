"""One module per attention head (the form of Karpathy's "Let's build GPT" lecture, which students copy most: a `Head`
class whose forward computes one head's keys, queries, weights and output, and a `MultiHeadAttention` that runs a
ModuleList of them, ``torch.cat([h(x) for h in self.heads], dim=-1)``). Each per-head step is then one head at each hit
of its line, read with h = 1, and every head's step checks on its own; only the concatenation (the catalogue's "heads
concatenated", ``ContextConcat``) needs the heads together, and had read one head's weights and values against the
whole (B, T, C): unrecognised.

Read here from the hits: where the concatenation holds k = C / hs heads and the lines of its weights and values ran k
times for each of its own hits, its hit n is checked against hits (n − 1)·k + 1 … n·k of those lines stacked on the
heads axis, in the order they ran (the order the ModuleList runs its heads, the order `torch.cat` joins them). The
check and its bug forms are the catalogue's own; the page says which hits were read."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

import torch

from transformer_trace.checks import FAILED, CheckResult, ContextConcat
from transformer_trace.checks.base import needs_evidence
from transformer_trace.sources import Ref, TensorDict
from transformer_trace.trace.reading.pages import SnapshotReading


def _hits_in_layout(pages: Sequence[SnapshotReading], ref: Ref) -> tuple[SnapshotReading, list[torch.Tensor]] | None:
    """The captured page holding record ``ref`` and its value at every hit in the catalogue's layout; None where a hit
    has none."""
    for page in pages:
        if page.captured and ref in page.snap.tensors:
            k = page.snap.tensors.index(ref)
            if k >= len(page.hit_layouts):
                return None
            hits = [layout.canonical if layout is not None else None for layout in page.hit_layouts[k]]
            if not hits or any(hit is None for hit in hits):
                return None
            return page, [hit for hit in hits if hit is not None]
    return None


def _heads(hits: list[torch.Tensor], heads: int, shown: int) -> torch.Tensor | None:
    """Hits (shown − 1)·heads … shown·heads − 1 (counted from 0), each one head (B, 1, L, ·), stacked on the heads
    axis; None where they are not one head each, or there are not that many."""
    chosen = hits[(shown - 1) * heads:shown * heads]
    if len(chosen) != heads or any(hit.dim() != 4 or hit.shape[1] != 1 or hit.shape != chosen[0].shape
                                   for hit in chosen):
        return None
    return torch.cat(chosen, dim=1)


def heads_of_their_own_modules(pages: Sequence[SnapshotReading], results: dict[int, list[CheckResult]],
                               views: Mapping[int, TensorDict],
                               in_terms: Callable[[CheckResult], CheckResult]) -> dict[int, list[CheckResult]]:
    """``results`` with each concatenation of heads whose checks neither passed nor found a bug read from its per-head
    lines' hits, where they are one head each (see the module's doc); ``views``: each captured page's view of the run.
    A failure there needs evidence as every check's does (base.py ``needs_evidence``)."""
    for page in pages:
        number, found = page.snap.number, results.get(page.snap.number, [])
        check = next((c for c in page.snap.checks if isinstance(c, ContextConcat)), None)
        if check is None or not page.captured or number not in views or any(r.passed or r.status == FAILED
                                                                              for r in found):
            continue  # passed, or red with evidence: not read again
        probs, values = _hits_in_layout(pages, check.probs), _hits_in_layout(pages, check.v)
        if probs is None or values is None:
            continue
        layout = page.layout
        whole = layout.canonical if layout is not None and layout.canonical is not None else page.main.shown.tensor
        head_size = values[1][0].shape[-1]
        if whole.dim() < 1 or not head_size or whole.shape[-1] % head_size or whole.shape[-1] == head_size:
            continue
        heads, ran = whole.shape[-1] // head_size, len(page.hit_values[0]) if page.hit_values else 0
        if not ran or len(probs[1]) != heads * ran or len(values[1]) != heads * ran:
            continue  # the per-head lines ran k times for each concatenation: the heads of one layer, in order
        shown = page.lines[page.tensor_lines[0]].shown
        weights, per_head = _heads(probs[1], heads, shown), _heads(values[1], heads, shown)
        if weights is None or per_head is None:
            continue
        view = views[number]
        tensors = {**view.tensors, view.name(check.probs): weights, view.name(check.v): per_head}
        # the queries and keys, read only by the bug forms: left out (one head each, not the concatenation's heads)
        result = dataclasses.replace(check, q=None, k=None).run(view.with_tensors(tensors))
        if not result.checkable:
            continue
        first, last = (shown - 1) * heads + 1, shown * heads
        note = (f" (the {heads} heads read from hits {first}–{last} of your per-head lines {probs[0].label} and "
                f"{values[0].label}: one module per head, its hits in the order they ran)")
        results[number] = [in_terms(needs_evidence(dataclasses.replace(result, detail=result.detail + note)))]
    return results
