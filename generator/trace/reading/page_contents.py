"""What each page of a traced script shows (``traced_contents``, for the one page builder, generator/pages.py
``snapshot_pages``): its reading (pages.py ``SnapshotReading``), its verdicts and figures, and where its tensors come
from (its ``Provenance``), all known before the page is made: the pages' stage, after the reading, the checks and the
figures."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from transformer_trace.catalogue import Snapshot
from transformer_trace.pages import PageContents
from transformer_trace.sources import TensorDict
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.pages import DATA_LIMIT, SnapshotReading
from transformer_trace.trace.reading.verify import Layout

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.trace.reading.checking import Judgement


@dataclass(frozen=True)
class Provenance:
    """Where a traced page's tensors come from and how they were read (generator/trace/reading/): everything a page of
    a script's run says that a model run's does not, made here with the page's contents (``traced_contents``). A
    model run's page has none (generator/pages.py ``SnapshotPage.provenance`` None), so a template asks
    ``page.provenance`` once, never which kind of run it is field by field."""

    marker_example: str  # how to mark the snapshot, where the script did not
    doc: str = ""  # what the catalogue's model declares the step's tensor to be
    hit_note: str = ""  # which hit of a line run several times the page shows
    layout: Layout | None = None  # how the first tensor's shape reads as the named one (None: not captured)
    bound: tuple[str, ...] = ()  # named dimensions bound from the script's tensors: "h = 4 (heads)"
    order: int = 0  # the page's place in the order the script ran
    shown_hit: int = 1  # which hit of its (first) marked line the page shows
    hit_values: tuple[tuple[torch.Tensor | None, ...], ...] = ()  # per tensor: its value at every hit
    calls: tuple[ModuleCall, ...] = ()  # the module calls its line(s) made at the shown hit
    derived_from: tuple[str, ...] = ()  # not captured: derived from these for its readers' checks
    not_drawn: tuple[str, ...] = ()  # its figures not drawn: "caption — needs ..."
    data_written: bool = False  # every tensor of the page is in data/
    left_out: int = 0  # values: above it a tensor is left out of data/ (0: none is)


def traced_contents(by_number: Mapping[int, SnapshotReading], judged: Mapping[int, Judgement],
                    drawn: Mapping[int, tuple[dict[str, str], ...]], not_drawn: Mapping[int, tuple[str, ...]],
                    source: TensorDict | None) -> Callable[[Snapshot], PageContents]:
    """What each snapshot's page shows of a traced script (for the one page builder, generator/pages.py
    ``snapshot_pages``): its reading, its checks' results, its figures drawn and not, and where its tensors came from
    (its ``Provenance``), all known before the page is made."""
    def contents(snap: Snapshot) -> PageContents:
        reading, verdicts = by_number[snap.number], judged[snap.number]
        filed = reading.captured and source is not None and snap.tensors and source.has(snap.tensors[0])
        written = [t for t in reading.tensors if 0 < t.shown.numel <= DATA_LIMIT]
        return PageContents(
            tensors=reading.tensors, named_shape=reading.named_shape, expected_shape=(), checks=verdicts.listed,
            verdict=verdicts.verdict, figures=drawn.get(snap.number, ()), captured=reading.captured,
            record=source.name(snap.tensors[0]) if filed and source is not None else "", named=reading.named,
            provenance=Provenance(
                marker_example=reading.marker_example, doc=reading.doc, hit_note=reading.hit_note,
                layout=reading.layout, bound=reading.bound, order=reading.order, shown_hit=reading.shown_hit,
                hit_values=reading.hit_values, calls=reading.calls, derived_from=verdicts.derived_from,
                not_drawn=not_drawn.get(snap.number, ()),
                data_written=reading.captured and len(written) == len(reading.tensors),
                left_out=DATA_LIMIT if any(t.shown.numel > DATA_LIMIT for t in reading.tensors) else 0))

    return contents
