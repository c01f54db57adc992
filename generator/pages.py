"""A report's pages before they are written: one ``SnapshotPage`` per snapshot, for a model run and a traced script.

The one page class, the one tensor section the templates (generator/templates/) read, and the one place pages are made
(``snapshot_pages``), each page built once, from everything known of it, and frozen. What a page shows comes from its
run, by the run's contents function (one contract, ``PageContents``): a model run's recording (generator/render.py
``recorded_contents``), or a traced script's reading of its capture (generator/trace/reading/pages.py
``traced_contents``). A traced page adds one field, its ``provenance`` (the marked lines, the hit shown, the layout its
shape was read in, the dimensions bound ...; None for a model run): the one thing a template asks of a trace, defined
by the trace's reading that makes it (generator/trace/reading/pages.py ``Provenance``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypedDict

import torch

from transformer_trace.catalogue import Report, Snapshot
from transformer_trace.checks import CheckResult
from transformer_trace.sources import Lacking, MissingTensor, NotCheckable
from transformer_trace.tensors import TensorView

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.trace.reading.pages import Provenance


@dataclass(frozen=True)
class SourceExcerpt:
    """The statement that computed a tensor, with the lines around it: from a model file, or from a traced script
    (``last``: the statement's last line; ``block``: the fenced, highlighted excerpt of the user's code)."""

    path: str  # relative to the repository root (a traced script's: to its folder)
    line: int
    start: int
    lines: list[str]
    last: int | None = None
    block: str = ""
    at: str = ""  # in a notebook: "x.ipynb, cell 7, line 3" (generator/trace/notebook.py); empty for a script

    @property
    def highlight(self) -> int:
        return self.line - self.start + 1


@dataclass(frozen=True)
class DictEntry:
    """One entry of a traced value that is a dict of tensors: its key and what the page shows of it, a row each."""

    key: str
    shown: TensorView
    slice_index: str
    slice_text: str  # one line: the leading values, as the section's own slice shows them

    @classmethod
    def of(cls, key: object, tensor: torch.Tensor) -> DictEntry:
        view = TensorView(str(key), tensor)
        index, text = view.slice_text(rows=1, cols=6)
        return cls(str(key), view, index, " ".join(line.strip() for line in text.splitlines()))


@dataclass(frozen=True)
class TensorSection:
    """One tensor of a page: ``shown`` (what the page shows: as recorded, or as the user's script held it) and
    ``view``, what the report's blocks index: the same tensor in the catalogue's layout (``catalogue``, a traced
    tensor's, read once by generator/trace/reading/run_layout.py ``catalogue_layout`` in the run's one layout; where
    it cannot be read so, why)."""

    name: str  # record name (a traced tensor's: its file under data/)
    shown: TensorView
    index: str | None
    device: str
    source: SourceExcerpt
    slice_index: str
    slice_text: str
    variable: str = ""  # the name the page gives it: the catalogue's variable, or the user's
    marker_line: int | None = None  # the line of a breakpoint comment that captured it (a traced script's)
    note: str = ""  # what the value was converted from, where a traced script's was not a tensor
    marked_at: str = ""  # the marker's place as the user sees it: "x.py:12", "x.ipynb, cell 7, line 3"
    absent: bool = False  # the value is not a tensor a page can show (``note`` says what it is): no shape, no dtype
    catalogue: TensorView | NotCheckable | None = None  # None: ``shown`` is in the catalogue's layout
    entries: tuple[DictEntry, ...] = ()  # a dict of tensors: every entry (``shown`` is the first, which checks read)

    @property
    def view(self) -> TensorView:
        if self.catalogue is None:
            return self.shown
        if isinstance(self.catalogue, NotCheckable):
            raise self.catalogue
        return self.catalogue

    @property
    def label(self) -> str:
        """Its heading where a page shows several tensors: its record name, or the variable a script marked."""
        if self.marker_line is None:
            return f"`{self.name}`"
        from transformer_trace.text import name_code  # the page text's escaping, broken only at separators

        return name_code(self.variable)


class CapturedTensors(list, Lacking):
    """A traced page's captured tensors (read by generator/trace/reading/pages.py), the list its ``main`` and a
    report's blocks index: one it lacks (the snapshot not captured, or fewer tensors captured than it has) is a
    MissingTensor saying how to capture it, so a report's block that reads it falls back naming that."""

    def __init__(self, label: str, marker_example: str) -> None:
        super().__init__()
        self.label, self.marker_example = label, marker_example

    def lack(self, i: Any) -> MissingTensor:
        if not self:
            return MissingTensor(f"snapshot {self.label}", f"not captured; mark it with {self.marker_example}")
        return MissingTensor(f"tensor {int(i) + 1} of snapshot {self.label}", f"its marker captured {len(self)}")

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, int) and not -len(self) <= i < len(self):
            raise self.lack(i)
        return super().__getitem__(i)


class PageTensors:
    """What a snapshot's tensors read as, for a page and for the trace's reading it is built from
    (generator/trace/reading/pages.py ``SnapshotReading``): its label, first tensor, named shapes and variables."""

    report: Report
    snap: Snapshot
    tensors: Sequence[TensorSection]
    named_shape: tuple[str, ...]  # the expected shape in the legend's symbols: the snapshot's, or its first tensor's
    named: tuple[tuple[str, ...] | None, ...]  # the named shape of each of its tensors, where given

    @property
    def label(self) -> str:
        return self.report.label(self.snap.number)

    @cached_property
    def main(self) -> TensorSection:
        """Its first tensor, read once: what its checks, its page's text and every template read of it."""
        return self.tensors[0]

    @property
    def shape(self) -> tuple[str, ...]:
        """The named shape the page expects of its first tensor."""
        return self.named_shape

    def shape_of(self, i: int) -> tuple[str, ...]:
        named = self.named[i] if i < len(self.named) else None
        return named or self.named_shape

    @property
    def marked(self) -> bool:
        """Whether its tensors are a script's, marked at its lines (their variables are the user's)."""
        return any(t.marker_line is not None for t in self.tensors)

    @property
    def variables(self) -> str:
        return ", ".join(t.variable for t in self.tensors)

    @property
    def variable(self) -> str:
        """The variable the page shows: the user's where a script marked it, else the catalogue's."""
        return self.variables if self.marked else self.snap.variable


class PageContents(TypedDict):
    """What a snapshot's page shows of its run, read by the run's own contents function (a model run's:
    generator/render.py ``recorded_contents``; a traced script's: generator/trace/reading/pages.py
    ``traced_contents``) for the one page builder, ``snapshot_pages``."""

    tensors: Sequence[TensorSection]
    named_shape: tuple[str, ...]
    expected_shape: tuple[int, ...]
    checks: tuple[CheckResult, ...]
    verdict: CheckResult | None
    figures: tuple[dict[str, str], ...]
    captured: bool
    record: str
    named: tuple[tuple[str, ...] | None, ...]
    provenance: Provenance | None


@dataclass(frozen=True)
class SnapshotPage(PageTensors):
    """A snapshot's page, built once from everything its run says of it (``snapshot_pages``) and never changed after:
    what the page shows, its checks' results, and, for a traced script, its ``provenance``. What is rendered with it
    (its explanation, the questions it informs, its neighbours' links) is the writer's (generator/render.py)."""

    report: Report  # a traced script's own points too: generator/trace/reading/pages.py own_report
    snap: Snapshot
    path: str  # page path within the report folder, e.g. "encoder/07-self-attention-queries-q.md"
    tensors: Sequence[TensorSection]
    named_shape: tuple[str, ...]
    expected_shape: tuple[int, ...]  # the named shape in this run's sizes (a traced page: none, its layout says)
    checks: tuple[CheckResult, ...]
    verdict: CheckResult | None  # its verdict where not its checks combined (a trace's: by those that ran)
    figures: tuple[dict[str, str], ...]
    captured: bool  # a model run records every snapshot; a script may not have reached a marker
    record: str  # the record name of its first tensor (what the explorer's groups match)
    named: tuple[tuple[str, ...] | None, ...]
    provenance: Provenance | None  # a traced script's page: where its tensors come from; None: a model run's

    @property
    def check(self) -> CheckResult:
        """The snapshot's checks as one result (the only one, when it has one)."""
        return self.verdict if self.verdict is not None else CheckResult.combined(list(self.checks))

    @property
    def shape_ok(self) -> bool:
        return all(t.view.shape == self.expected_shape for t in self.tensors)

    @property
    def variable_heading(self) -> str:
        """What a table of pages calls the variable column."""
        return "Your variable" if self.provenance is not None else "Variable"

    @property
    def variable_cell(self) -> str:
        """The variable in a table of pages."""
        if not self.captured:
            return "not captured"
        if self.marked:
            from transformer_trace.text import name_code  # the page text's escaping, broken only at separators

            return name_code(self.variables)
        return f"`{self.snap.variable}`"

    @property
    def differs(self) -> str:
        """How our model's step differs from the seed report's: said on our model's pages, not on a script's."""
        return self.snap.differs if self.provenance is None else ""

    def link_from(self, other_path: str) -> str:
        """Relative link from page ``other_path`` to this page."""
        depth = other_path.count("/")
        return "../" * depth + self.path


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def page_path(snap: Snapshot) -> str:
    return f"{snap.stage}/{snap.number:02d}-{slugify(snap.title)}.md"


def snapshot_pages(report: Report, contents: Callable[[Snapshot], PageContents]) -> list[SnapshotPage]:
    """The report's pages, one per snapshot of its catalogue in its order: the one place a ``SnapshotPage`` is made.
    ``contents(snap)``: what the snapshot's page shows (its ``SnapshotPage`` fields beyond the report, snapshot and
    path), read from the run: recorded by a model of ours, or captured from a script. A page's neighbours are its
    index's in this list (the writer links them: generator/render.py ``write_pages``). Every page's contents are read
    from the run first, then the pages are built from them."""
    read = [(snap, contents(snap)) for snap in report.snapshots]
    return [SnapshotPage(report=report, snap=snap, path=page_path(snap), **shown) for snap, shown in read]


@dataclass(frozen=True)
class Alert:
    """An admonition at the top of an overview: what stopped the run, or a line's hits left unassigned."""

    kind: str  # the admonition's type: "failure", "warning"
    title: str
    paragraphs: tuple[str, ...]  # Markdown, user text already escaped


@dataclass(frozen=True)
class Dimensions:
    """The overview's table of named dimensions: its heading, the sentence before it, what its values column says,
    and (symbol, meaning, size) rows (a size the run did not bind: "not bound")."""

    heading: str
    intro: str
    column: str
    rows: tuple[tuple[str, str, Any], ...]


@dataclass(frozen=True)
class Column:
    """A column of the overview's tables of snapshots: its heading, and which of a page's cells it shows (``kind``,
    one of overview.md.j2's cells: link, title, variable, shape, check, verdict)."""

    heading: str
    kind: str


@dataclass(frozen=True)
class Overview:
    """What a report's overview page shows beyond the pages' list, decided where the run is known (a model run's in
    generator/render.py ``run_overview``, a traced script's in trace/reading/run.py ``trace_overview``), so the
    overview template renders it and never asks which kind of run it is."""

    texts: str  # the template of macros ``summary()`` and ``record()``: the run's opening and closing words
    columns: tuple[Column, ...]
    alerts: tuple[Alert, ...] = ()
    settings: tuple[tuple[str, Any], ...] = ()  # the model's configuration (a run of a model of ours)
    parameters: tuple[tuple[str, int], ...] = ()  # parameters per component
    dimensions: Dimensions | None = None
    glance: tuple[dict[str, str], ...] = ()  # overview figures: file, caption
    outcome: Any = None  # what the texts read of the run beyond the pages (a trace's counts: reading.run.TraceReport)
