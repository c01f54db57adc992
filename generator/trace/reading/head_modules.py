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

from transformer_trace.checks import FAILED, Check, CheckResult, ContextConcat, HeadsRejoin
from transformer_trace.checks.base import needs_evidence
from transformer_trace.sources import Ref, TensorDict, TensorSource
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.pages import SnapshotReading
from transformer_trace.trace.reading.weights import bind


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


def _whole_projection(pages: Sequence[SnapshotReading], ref: Ref) -> Ref:
    """The whole projection (B, L, C) the catalogue splits into the per-head record ``ref`` (its HeadsRejoin); else
    ``ref`` itself (a whole projection a check splits into the probabilities' heads)."""
    for page in pages:
        for check in page.snap.checks:
            if isinstance(check, HeadsRejoin) and ref in check.heads:
                return check.full[check.heads.index(ref)]
    return ref


def _per_head_hits(pages: Sequence[SnapshotReading], ref: Ref) -> tuple[SnapshotReading, list[torch.Tensor]] | None:
    """A per-head record's value at every hit: from the page holding it; else, where its head split's whole projection
    (or the whole projection ``ref``) is captured one head at each hit (a per-head module's own Linear: (B, L, hs), the
    whole's width over the heads), those hits, each one head (B, 1, L, hs) (from (L, B, hs) in a sequence-first run)."""
    if (held := _hits_in_layout(pages, ref)) is not None:
        return held
    whole = _whole_projection(pages, ref)
    page = next((p for p in pages if p.captured and whole in p.snap.tensors), None)
    if page is None:
        return None
    k = page.snap.tensors.index(whole)
    hits = [hit for hit in (page.hit_values[k] if k < len(page.hit_values) else ()) if hit is not None]
    if not hits or len(hits) != len(page.hit_values[k]) or any(hit.dim() != 3 or hit.shape != hits[0].shape
                                                                for hit in hits):
        return None
    return page, [(hit.transpose(0, 1) if page.run.sequence_first else hit).unsqueeze(1) for hit in hits]


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
    """``results`` with the steps of per-head modules read from their lines' hits: a concatenation of heads from the
    hits of the layer shown stacked (``_concatenations``), a step of one head from the same hit of the lines that make
    its inputs (``_one_head_steps``), a head's own q, k or v projection (one head wide: its shape no reading of the
    catalogue's (B, L, C)) from the Linear its line called (``_one_head_projections``)."""
    results = _concatenations(pages, results, views, in_terms)
    return _one_head_projections(pages, _one_head_steps(pages, results, views, in_terms), views, in_terms)


def _unread(found: list[CheckResult]) -> bool:
    """Whether no check passed nor found a bug (a red with evidence, or a pass, is not read again)."""
    return not any(r.passed or r.status == FAILED for r in found)


def _one_head_steps(pages: Sequence[SnapshotReading], results: dict[int, list[CheckResult]],
                    views: Mapping[int, TensorDict],
                    in_terms: Callable[[CheckResult], CheckResult]) -> dict[int, list[CheckResult]]:
    """Each step of one head (read with h = 1: a per-head module's scores) whose check lacks the per-head inputs no
    marker shows (q and k split into heads, #12), read from the same hit of the lines that made them one head each
    (the head's own q and k Linears, (B, L, hs) at each hit: ``_per_head_hits``), where those lines ran as often."""
    for page in pages:
        number, found = page.snap.number, results.get(page.snap.number, [])
        if not page.captured or number not in views or not _unread(found) or not page.hit_values:
            continue
        view, own = views[number], page.main.shown.tensor
        layout = page.layout
        own = layout.canonical if layout is not None and layout.canonical is not None else own
        if not isinstance(own, torch.Tensor) or own.dim() != 4 or own.shape[1] != 1:
            continue  # not one head's step
        ran, shown = len(page.hit_values[0]), page.lines[page.tensor_lines[0]].shown
        for check in page.snap.checks:
            missing = [ref for name, ref in _tensor_fields(check) if not view.has(ref)]
            tensors, read = dict(view.tensors), []
            for ref in missing:
                hits = _per_head_hits(pages, ref)
                if hits is None or len(hits[1]) != ran or hits[1][shown - 1].shape[:2] != own.shape[:2]:
                    break
                tensors[view.name(ref)] = hits[1][shown - 1]
                read.append(hits[0].label)
            else:
                if not missing:
                    continue
                result = _tried(check, view.with_tensors(tensors))
                if result is not None and result.checkable:
                    note = (f" (one head's {', '.join(dict.fromkeys(read))} read from hit {shown} of your per-head "
                            "lines, as this step's own: one module per head)")
                    results[number] = [in_terms(needs_evidence(dataclasses.replace(result,
                                                                                    detail=result.detail + note)))]
                    break
    return results


def _one_head_projections(pages: Sequence[SnapshotReading], results: dict[int, list[CheckResult]],
                          views: Mapping[int, TensorDict],
                          in_terms: Callable[[CheckResult], CheckResult]) -> dict[int, list[CheckResult]]:
    """Each projection step that is one head's (a per-head module's own Linear, (B, L, hs) where the catalogue has
    (B, L, C): C = k·hs, k > 1, the line run a multiple of k times) checked as the Linear its line called, on the
    input the catalogue names: the head's part of the projection, with its input read as for the whole one."""
    for page in pages:
        number, found = page.snap.number, results.get(page.snap.number, [])
        if not page.captured or number not in views or not _unread(found) or not page.hit_values:
            continue
        raw, width = page.main.shown.tensor, page.run.dims.get("C")
        if (not isinstance(raw, torch.Tensor) or raw.dim() != 3 or not width or not page.calls
                or len(page.named_shape) != 3):
            continue  # a step the catalogue has (B, L, C), given one head wide, only
        head_size = raw.shape[-1]
        if head_size >= width or width % head_size or len(page.hit_values[0]) % (width // head_size):
            continue  # not one head of k: the whole width, or a line that ran once per layer
        view = views[number]
        for check in page.snap.checks:
            out = getattr(check, "out", None)
            if check.TRACE.calls.get("module", (None,))[0] is not ModuleKind.LINEAR or not isinstance(out, Ref):
                continue
            step = raw.detach().double()
            with_step = view.with_tensors({**view.tensors, view.name(out): step})
            bound = bind(check, page.calls, with_step, step)
            result = _tried(bound.check, bound.source) if bound is not None else None
            if result is not None and result.checkable:
                note = (f" (one head's projection, {head_size} of the {width} channels: one module per head, its "
                        "Linear one head wide)")
                results[number] = [in_terms(needs_evidence(dataclasses.replace(result, detail=result.detail + note)))]
                break
    return results


def _tried(check: Check, source: TensorSource) -> CheckResult | None:
    """``check`` run on what a per-head reading gave it; None where those tensors do not fit the claim at all (a
    shape the check cannot read): the step keeps what its own reading found, as a page's checks do
    (checking.py ``_run_checks``)."""
    try:
        return check.run(source)
    except (RuntimeError, ValueError, IndexError):
        return None


def _tensor_fields(check: Check) -> list[tuple[str, Ref]]:
    """The check's tensor inputs by field (its step, ``out``, left out)."""
    return [(name, value) for name, kind in check.parameters().items()
            if kind == "tensor" and name != "out" and isinstance(value := getattr(check, name), Ref)]


@dataclasses.dataclass(frozen=True)
class JoinedHeads:
    """A concatenation's heads read from its per-head lines' hits: ``heads`` modules, their lines run ``heads`` times
    for each of the concatenation's ``ran`` hits, the weights' and values' pages with their values at every hit."""

    heads: int
    ran: int
    probs: tuple[SnapshotReading, list[torch.Tensor]]
    values: tuple[SnapshotReading, list[torch.Tensor]]


def joined_heads(pages: Sequence[SnapshotReading], page: SnapshotReading, check: ContextConcat) -> JoinedHeads | None:
    """How the concatenation ``page`` (checked by ``check``) joins heads of their own modules: the per-head weights and
    values one head each at every hit, k = the concatenation's width / the values' head size > 1, their lines run k
    times for each of its hits (the heads of one layer, in order); None where it does not."""
    probs, values = _hits_in_layout(pages, check.probs), _per_head_hits(pages, check.v)
    if probs is None or values is None:
        return None
    layout = page.layout
    whole = layout.canonical if layout is not None and layout.canonical is not None else page.main.shown.tensor
    head_size = values[1][0].shape[-1]
    if whole.dim() < 1 or not head_size or whole.shape[-1] % head_size or whole.shape[-1] == head_size:
        return None
    heads, ran = whole.shape[-1] // head_size, len(page.hit_values[0]) if page.hit_values else 0
    if not ran or len(probs[1]) != heads * ran or len(values[1]) != heads * ran:
        return None
    return JoinedHeads(heads, ran, probs, values)


def heads_joined(pages: Sequence[SnapshotReading]) -> int | None:
    """The number of heads a run of one module per head joins (the first concatenation read from its per-head lines'
    hits): the model's h, which no captured tensor shows on an axis of its own; None where no concatenation is so."""
    for page in pages:
        check = next((c for c in page.snap.checks if isinstance(c, ContextConcat)), None)
        if check is not None and page.captured and (joined := joined_heads(pages, page, check)) is not None:
            return joined.heads
    return None


def _concatenations(pages: Sequence[SnapshotReading], results: dict[int, list[CheckResult]],
                    views: Mapping[int, TensorDict],
                    in_terms: Callable[[CheckResult], CheckResult]) -> dict[int, list[CheckResult]]:
    """``results`` with each concatenation of heads whose checks neither passed nor found a bug read from its per-head
    lines' hits, where they are one head each (see the module's doc); ``views``: each captured page's view of the run.
    A failure there needs evidence as every check's does (base.py ``needs_evidence``)."""
    for page in pages:
        number, found = page.snap.number, results.get(page.snap.number, [])
        check = next((c for c in page.snap.checks if isinstance(c, ContextConcat)), None)
        if check is None or not page.captured or number not in views or not _unread(found):
            continue  # passed, or red with evidence: not read again
        joined = joined_heads(pages, page, check)
        if joined is None:
            continue
        heads, ran, probs, values = joined.heads, joined.ran, joined.probs, joined.values
        shown = page.lines[page.tensor_lines[0]].shown
        weights, per_head = _heads(probs[1], heads, shown), _heads(values[1], heads, shown)
        if weights is None or per_head is None or per_head.shape[:2] != weights.shape[:2] \
                or per_head.shape[-2] != weights.shape[-1]:
            continue
        view = views[number]
        tensors = {**view.tensors, view.name(check.probs): weights, view.name(check.v): per_head}
        # the queries and keys, read only by the bug forms (K where V belongs), stacked alike where their per-head
        # lines ran as often; else left out (one head each, not the concatenation's heads)
        parts = {}
        for field in ("q", "k"):
            ref = getattr(check, field)
            read = _per_head_hits(pages, ref) if ref is not None else None
            stacked = _heads(read[1], heads, shown) if read is not None and len(read[1]) == heads * ran else None
            if stacked is not None and stacked.shape[:2] == per_head.shape[:2]:
                tensors[view.name(ref)], parts[field] = stacked, ref
        reading = dataclasses.replace(check, q=parts.get("q"), k=parts.get("k")) if len(parts) == 2 else \
            dataclasses.replace(check, q=None, k=None)
        result = _tried(reading, view.with_tensors(tensors))
        if result is None or not result.checkable:
            continue
        first, last = (shown - 1) * heads + 1, shown * heads
        note = (f" (the {heads} heads read from hits {first}–{last} of your per-head lines {probs[0].label} and "
                f"{values[0].label}: one module per head, its hits in the order they ran)")
        results[number] = [in_terms(needs_evidence(dataclasses.replace(result, detail=result.detail + note)))]
    return results
