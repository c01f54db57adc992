"""A traced script's verdicts: the catalogue's own typed checks (generator/checks.py), the ones its snapshots declare,
run on a ``TensorDict`` of the captured tensors under the catalogue's record names. Pass k of a loop is filed under
layer k's names, so a check that reads ``{block_prev}`` (the previous layer's output) compares pass k's input with
pass k − 1's output; placeholders that name one pass (``{block_last}``) are filled from the passes the script ran
(``RunOptions.NAMED_PASSES``). Checks that need the model's weights or the run's inputs are not checkable; a page is
judged by the checks that could run."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import torch

from transformer_trace.checks import (
    FAILED, NOT_CHECKABLE, PASSED, CheckResult, UnfittableWeights, close, judged_at, tolerance,
)
from transformer_trace.checks.base import LOW_PRECISION
from transformer_trace.checks.base import needs_evidence
from transformer_trace.checks.evidence import BUG_FORM, Evidence
from transformer_trace.sources import MissingTensor, NoInput, NoWeights, NotCheckable, TensorDict
from transformer_trace.trace.reading.verify import Layout, LayoutStatus
from transformer_trace.trace.reading.derived import derive_missing
from transformer_trace.trace.reading.dropout import said_dropout
from transformer_trace.trace.reading.residuals import sublayer_bound
from transformer_trace.trace.reading.weights import bind, modules_called, run_bound

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.catalogue import Report
    from transformer_trace.trace.reading.pages import SnapshotReading

# A leading corner of a big tensor (``[:5, :5]``, what a debugger shows of an embedding table): kept under the record
# name, and the checks that read it compare what it covers.
CORNER = re.compile(r"\[\s*:\s*\d+(\s*,\s*:\s*\d+)*\s*\]")


@dataclass(frozen=True)
class TensorLabel:
    """Where a record name's tensor comes from in a trace (or would): ``snapshot`` (its label, "S08"), which of the
    snapshot's several tensors (``variable``), which pass of a loop that ran more than once (``at_pass``); or,
    ``sliced``, the whole tensor of which the snapshot's page shows a slice (a trace captures only the slice)."""

    snapshot: str
    variable: str = ""
    at_pass: int | None = None
    sliced: bool = False
    # captured, but not readable in the catalogue's layout: why (dimensions unbound, values not copied)
    unreadable: str = ""
    derived_from: tuple[str, ...] = ()  # not captured: derived from these (generator/trace/reading/derived.py)

    def __str__(self) -> str:
        if self.sliced:
            return f"the whole of what {self.snapshot} shows a slice of"
        if self.derived_from:
            return f"{self.snapshot} (derived from {', '.join(self.derived_from)})"
        return (self.snapshot + (f" ({self.variable})" if self.variable else "")
                + (f" at pass {self.at_pass}" if self.at_pass else ""))

    @property
    def needed(self) -> str:
        """As a not checkable check names it: "snapshot S08", or the whole of a sliced one."""
        if self.unreadable:
            return f"snapshot {self} in the catalogue's layout ({self.unreadable})"
        return str(self) if self.sliced else f"snapshot {self}"


class UnboundDimensions(NotCheckable):
    """A captured tensor whose named shape uses dimensions no captured tensor bound: it cannot be read in the
    catalogue's layout, so no check can be trusted on it (a shape error would read as a failure)."""

    @classmethod
    def of(cls, dims: tuple[str, ...], shape: tuple[int, ...], named: tuple[str, ...]) -> UnboundDimensions:
        return cls(f"the dimension{'s' if len(dims) > 1 else ''} {', '.join(dims)} bound",
                   f"no captured tensor shows {'their sizes' if len(dims) > 1 else 'its size'}, so your shape {shape} "
                   f"cannot be read as ({', '.join(named)})")


def needed(lack: NotCheckable, labels: dict[str, TensorLabel]) -> str:
    """What a not checkable check lacked, in the user's terms: a snapshot to capture, weights a trace does not have."""
    if isinstance(lack, MissingTensor):
        label = labels.get(lack.missing)
        return label.needed if label is not None else f"{lack.missing}, which no snapshot of the catalogue shows"
    if isinstance(lack, NoWeights):
        return f"the model's weights ({lack.missing}), which a trace does not capture"
    if isinstance(lack, NoInput):
        return f"the run's {lack.missing}, which a trace does not know"
    if isinstance(lack, UnfittableWeights):
        return "the LayerNorm's weights (with fewer than 3 positions a fitted gain and bias prove nothing)"
    return f"{lack.missing} ({lack.why})" if lack.why else lack.missing


@dataclass(frozen=True)
class Judgement:
    """What a snapshot's declared checks found on the capture: ``checks``, one result per declared check, and
    ``verdict``, the page's, by the checks that could run; ``derived_from``, for a step not captured whose tensor its
    readers' checks derived (generator/trace/reading/derived.py), the captured steps it was derived from."""

    checks: tuple[CheckResult, ...]
    verdict: CheckResult
    derived_from: tuple[str, ...] = ()

    @property
    def listed(self) -> tuple[CheckResult, ...]:
        """Its results as the shared templates list them: its declared checks', or its one verdict."""
        return self.checks or (self.verdict,)


# (the snapshot's number, the result's index among its checks, a record name, the module call's input that stood in
# for it): _stand_ins_agree
StandIn = tuple[int, int, str, torch.Tensor]


def run_checks(readings: list[SnapshotReading], catalogue: Report, dims: dict[str, int],
               hit: int) -> tuple[TensorDict | None, dict[str, TensorLabel], dict[int, Judgement]]:
    """The captured tensors under the catalogue's record names and what each name comes from (catalogue_source); and
    each snapshot's judgement by its declared checks, run on them (by snapshot number)."""
    source, labels = catalogue_source(catalogue, readings, hit)
    # the checks also read what the steps nobody marked derive to (not the run's tensors: nothing shows them)
    derived: dict[str, tuple[str, ...]] = {}
    checked, read_labels = (source, labels) if source is None else _with_derived(readings, source, labels, derived)
    known = modules_called(readings, checked) if checked is not None else {}
    stand_ins: list[StandIn] = []
    with judged_at(captured_dtypes(readings)):  # half-precision tensors are judged at their own precision
        results = _check_pages(readings, catalogue, hit, dims, source, checked, read_labels, known, stand_ins)
        _stand_ins_agree(readings, results, stand_ins)
    results = said_dropout(readings, results)  # training mode: what no form matched ran with dropout, not unrecognised
    # a derived step's page says so only where a captured step's check read it (its detail names the derivation)
    said = " ".join(result.detail for reading in readings if reading.captured
                    for result in results[reading.snap.number])
    judged = {number: Judgement(tuple(found), CheckResult.combined(found, judge_checkable=True)) for number, found
              in results.items()}
    for reading in readings:
        roots = derived.get(reading.label, ())
        if roots and f"{reading.label} (derived from" in said:
            judged[reading.snap.number] = replace(judged[reading.snap.number], derived_from=roots)
    return source, labels, judged  # the run's tensors (generator/trace/reading/run.py traced_run): computed once, here


def captured_dtypes(pages: list[SnapshotReading]) -> set[torch.dtype]:
    return {t.shown.tensor.dtype for p in pages if p.captured for t in p.tensors
            if isinstance(getattr(t.shown, "tensor", None), torch.Tensor)}


def _stand_ins_agree(readings: list[SnapshotReading], results: dict[int, list[CheckResult]],
                     stand_ins: list[StandIn]) -> None:
    """Marked lines whose module calls read one catalogue tensor that no snapshot shows (the q, k and v projections of
    ln_1, each line calling its own Linear) read the same tensor: where all but one of three or more agree, the one
    that read another fails (K computed from another tensor than Q and V). Two that disagree do not tell which."""
    by_number = {reading.snap.number: reading for reading in readings}
    readers: dict[str, dict[int, tuple[SnapshotReading, int, torch.Tensor]]] = {}
    for number, index, name, tensor in stand_ins:
        readers.setdefault(name, {}).setdefault(number, (by_number[number], index, tensor))
    for name, found in readers.items():
        if len(found) < 3:
            continue
        for page, index, tensor in found.values():
            others = [(other, t) for other, _, t in found.values() if other is not page]
            agree = all(_same_values(t, others[0][1]) for _, t in others[1:])
            result = results[page.snap.number][index]
            # another layout of the same values (a Linear called on x.reshape(B * N, C)) is not told apart: no verdict
            if (not agree or result.status != PASSED or tensor.shape != others[0][1].shape
                    or _same_values(tensor, others[0][1])):
                continue
            _, detail = close(tensor.double(), others[0][1].double(), "this call's input vs theirs")
            message = (f"your step was computed from another tensor than {' and '.join(o.label for o, _ in others)} "
                       f"read, where the catalogue has them all read one, {name} (no snapshot shows it): {detail}")
            results[page.snap.number][index] = CheckResult(
                name=result.name, passed=False, status=FAILED, detail=f"{message}; from what it read: {result.detail}",
                evidence=Evidence(BUG_FORM, "computed from another tensor", message))


def _same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and close(a.double(), b.double(), "")[0]


def in_users_terms(result: CheckResult, labels: dict[str, TensorLabel], variables: dict[str, str]) -> CheckResult:
    """A failure's diagnosis with the catalogue's record names (``blocks.0.attn.scores``) replaced by the user's
    variables and the snapshot that shows them (``att (G11)``): what a student reads first is in their own names."""
    if result.evidence is None or result.parts:
        return result
    message = result.evidence.message
    for name in sorted(labels, key=len, reverse=True):  # the longest first: one name may begin another
        label = labels[name]
        variable = label.variable or variables.get(label.snapshot, "")
        # a record name that is a plain word ("mask") would be replaced in the prose too: dotted or snake names only
        if name in message and variable and not label.derived_from and any(c in name for c in "._"):
            said = f"{variable} ({label.snapshot})"
            literal = said.replace("\\", "\\\\")  # a replacement string, read as written: backslashes doubled
            message = re.sub(rf"(?<![\w.]){re.escape(name)}(?![\w.])", literal, message)
    if message == result.evidence.message:
        return result
    return replace(result, detail=result.detail.replace(result.evidence.message, message, 1),
                   evidence=replace(result.evidence, message=message))


def _check_pages(pages: list[SnapshotReading], catalogue: Report, hit: int, dims: dict[str, int],
                 source: TensorDict | None, checked: TensorDict | None, read_labels: dict[str, TensorLabel],
                 known: dict[str, Any], stand_ins: list[StandIn]) -> dict[int, list[CheckResult]]:
    """Each snapshot's results, one per declared check, in the user's terms (by snapshot number)."""
    variables = {page.label: page.variables for page in pages if page.captured}
    results = {}
    for page in pages:
        # a snapshot is judged on its own capture, even where an earlier one shows the same record point
        if source is not None and checked is not None and page.captured:
            places = _shown_places(page, catalogue, pages, hit) or dict(source.places)
            own = own_tensors(page, places)
            found = page_checks(page, TensorDict({**checked.tensors, **own}, places=places),
                                {**read_labels, **dict.fromkeys(own, TensorLabel(page.label))}, known, stand_ins, dims)
        else:
            found = page_checks(page, checked, read_labels, dims=dims)
        results[page.snap.number] = [in_users_terms(result, read_labels, variables) for result in found]
    return results


def _with_derived(pages: list[SnapshotReading], source: TensorDict, labels: dict[str, TensorLabel],
                  derived: dict[str, tuple[str, ...]]) -> tuple[TensorDict, dict[str, TensorLabel]]:
    """``source`` with the tensors of steps nobody marked derived from the captured ones (trace/reading/derived.py),
    and the labels that say so; ``derived`` gets, per snapshot label, the captured steps its tensor was derived from."""
    tensors, read_labels = dict(source.tensors), dict(labels)
    def label_of(label: str, read: list[TensorLabel]) -> TensorLabel:
        return TensorLabel(label, derived_from=tuple(dict.fromkeys(map(str, read))))

    derived.update(derive_missing(pages, tensors, read_labels, dict(source.places), label_of))
    return TensorDict(tensors, places=source.places), read_labels


def _shown_places(page: SnapshotReading, catalogue: Report, pages: list[SnapshotReading],
                  hit: int) -> dict[str, str] | None:
    """The placeholders of the pass a page shows where its line ran fewer times than ``hit`` (it shows its last pass, so
    its checks read that pass's neighbours, not pass ``hit``'s); None where it shows pass ``hit``."""
    ran = len(page.hit_values[0]) if page.hit_values else 0
    return pass_places(catalogue, ran, _passes(catalogue, pages)) if 0 < ran < hit else None


def _passes(catalogue: Report, pages: list[SnapshotReading]) -> dict[str, int]:
    """How many passes the script ran of each loop whose one pass the catalogue names (``RunOptions.NAMED_PASSES``)."""
    named = catalogue.options.NAMED_PASSES if catalogue.options is not None else {}
    return {name: _pass_count(pages, template) for name, (_, template) in named.items()}


def _not_checkable(name: str, detail: str, missing: tuple[str, ...] = (),
                   lacks: tuple[NotCheckable, ...] = ()) -> CheckResult:
    return CheckResult(name=name, passed=False, detail=detail, status=NOT_CHECKABLE, missing=missing, lacks=lacks)


def page_checks(page: SnapshotReading, source: TensorDict | None, labels: dict[str, TensorLabel],
                known: dict[str, Any] | None = None,
                stand_ins: list[StandIn] | None = None,
                dims: dict[str, int] | None = None) -> list[CheckResult]:
    """The snapshot's declared checks run on ``source``, each a ``CheckResult``; what a not checkable one needs is said
    in the user's terms (a snapshot to capture, the weights a trace does not have); a failure without evidence is
    unrecognised (checks/base.py ``needs_evidence``: code the tool has never seen is not called wrong for a form it
    does not know). ``stand_ins`` collects (page, the result's index, a record name, the module call's input that stood
    in for it: _stand_ins_agree)."""
    return [needs_evidence(result) for result in _page_checks(page, source, labels, known, stand_ins, dims)]


def _page_checks(page: SnapshotReading, source: TensorDict | None, labels: dict[str, TensorLabel],
                 known: dict[str, Any] | None, stand_ins: list[StandIn] | None,
                 dims: dict[str, int] | None) -> list[CheckResult]:
    checks = tuple(getattr(page.snap, "checks", ()))
    claims = [c.key().replace("_", " ") for c in checks]
    if not page.captured:
        return [_not_checkable(claim, "needs this snapshot captured") for claim in claims] or [_not_checkable("", "")]
    if any(t.shown.numel == 0 and t.note for t in page.tensors):
        return [_not_checkable("; ".join(claims), "; ".join(t.note for t in page.tensors if t.note))]
    layout = page.layout
    assert layout is not None, f"{page.label}: a captured snapshot read without its layout"
    if layout.mismatch:
        # a shape the catalogue's layouts do not read is no evidence: one batch item's one head in a loop over heads,
        # a slice of a tensor, are layouts too (a fresh implementation's per-head (N, hs) slices were called wrong so):
        # unrecognised (needs_evidence), the page's shape row saying it does not match
        return [CheckResult(name="; ".join(claims) or "shape", passed=False, status=FAILED,
                            detail=f"the shape {page.main.shown.shape} cannot be read as ({', '.join(page.shape)}): "
                            f"{layout.note}")]
    if layout.status is LayoutStatus.UNBOUND and layout.canonical is None and checks \
            and not layout.unbound:  # bound, but a part of the step only (one item's one head of a loop)
        return [_not_checkable(claim, f"needs the whole step: {layout.note}") for claim in claims]
    if layout.status is LayoutStatus.UNBOUND and layout.canonical is None and checks:
        lack = UnboundDimensions.of(layout.unbound, page.main.shown.shape, tuple(page.shape))
        return [_not_checkable(claim, f"needs {needed(lack, labels)}", (lack.missing,), (lack,)) for claim in claims]
    if source is None or not checks:
        return [_not_checkable("", "the catalogue makes no claim here that captured tensors could test")]
    results = []
    for check, claim in zip(checks, claims):
        # the weights and inputs of the module calls the marked line made (generator/trace/reading/weights.py)
        bound = bind(check, page.calls, source, page.main_as_called, known) if page.calls or known else None
        bound = bound or sublayer_bound(check, page.calls, source, page.main_as_called)
        try:
            with _judged_with_calls(page):
                try:
                    result = run_bound(bound) if bound is not None else check.run(source)
                except (RuntimeError, ValueError, IndexError):
                    if bound is None or not bound.stood_in:
                        raise
                    # a module call's input in another layout than the tensor it stands in for (a Linear called on
                    # x.reshape(B * N, C)): ours to read, not the script's error; the check without it
                    bound, result = None, check.run(source)
        except (RuntimeError, ValueError, IndexError) as exc:  # shapes that do not fit the claim at all
            results.append(CheckResult(name=claim, passed=False,
                                       detail=f"the captured tensors do not fit the claim: {exc}"))
            continue
        read = bound.check.inputs() if bound is not None else check.inputs()  # a module call's tensors: no label
        reads = [labels[name] for name in dict.fromkeys(source.name(ref) for ref in read) if name in labels]
        # a loop's wiring, or steps nobody marked: say which passes it compared, what it derived
        if result.checkable and any(label.at_pass or label.derived_from for label in reads):
            result = replace(result, detail=f"{result.detail} (read: {', '.join(map(str, reads))})")
        if not result.checkable:
            lacks = result.lacks or tuple(MissingTensor(m) for m in result.missing)
            needs = list(dict.fromkeys(needed(lack, labels) for lack in lacks))
            # phrases with commas of their own: semicolons
            what = ("; " if any(", " in n for n in needs) else ", ").join(needs)
            result = _not_checkable(claim, f"needs {what}", result.missing, lacks)
        if stand_ins is not None and bound is not None:
            stand_ins += [(page.snap.number, len(results), name, tensor) for name, tensor in bound.stood_in
                          if tensor is not None]
        results.append(result)
    return results


def _judged_with_calls(page: SnapshotReading) -> Any:
    """A module call of the page's line that ran in half precision (autocast), its result cast back: the page's checks
    judged at that precision too, where it is coarser than the one they run at."""
    dtypes = {t.dtype for call in page.calls for t in (*call.inputs, *call.outputs, *call.params.values())
              if isinstance(t, torch.Tensor)}
    coarser = [dtype for dtype in dtypes if LOW_PRECISION.get(dtype, 0.0) > tolerance()]
    return judged_at(coarser) if coarser else contextlib.nullcontext()


def _pass_count(pages: list[SnapshotReading], template: str) -> int:
    """How many passes the script ran of the loop whose pages use ``template``'s placeholders (0: none captured)."""
    names = set(re.findall(r"{(\w+)}", template))
    return max((len(page.hit_values[0]) for page in pages if page.captured and page.hit_values
                for ref in getattr(page.snap, "tensors", ())[:1] if names & set(re.findall(r"{(\w+)}", ref.template))),
               default=0)


def options_for(catalogue: Any, layer: int) -> Any:
    """The report's options for layer ``layer`` (a loop's pass ``layer``), or None where they cannot describe it (a
    layer past the model's depth) or the report has none (a script's own points: no model of ours)."""
    from dataclasses import fields

    from transformer_trace.errors import UserError

    if catalogue.options is None:
        return None
    names = {f.name for f in fields(catalogue.options)}
    try:
        return catalogue.options(layer=layer, **({"layers": max(layer, 2)} if "layers" in names else {}))
    except (UserError, TypeError, ValueError):
        return None


def places_for(catalogue: Any, layer: int) -> dict[str, str] | None:
    """The catalogue's record-name placeholders for layer ``layer`` (a loop's pass ``layer``), or None where the
    report's options cannot describe it (our own points have no catalogue)."""
    opts = options_for(catalogue, layer)
    return opts.places() if opts is not None else None


def pass_places(catalogue: Any, layer: int, passes: dict[str, int]) -> dict[str, str] | None:
    """The catalogue's placeholders for pass ``layer`` of the script's loop, with the ones that name one pass (the last,
    the second) filled from ``passes``, the passes the script ran; None where the report's options cannot describe
    it."""
    opts = options_for(catalogue, layer)
    if opts is None:
        return None
    places = opts.places()
    for name in opts.NAMED_PASSES:  # the options' own rule, counted in the passes the script ran
        chosen = opts.named_pass(name, passes.get(name, 0))
        if chosen is not None and options_for(catalogue, chosen) is not None:
            places[name] = opts.pass_place(name, chosen)
    return places


def _filed(page: SnapshotReading, k: int, tensor: torch.Tensor | None, found: Layout | None,
           places: dict[str, str]) -> tuple[str, torch.Tensor] | None:
    """The record name and catalogue-layout value of the page's ``k``-th tensor (``tensor``, read in the catalogue's
    layout as ``found``, by the reading: reading/pages.py), or None where it is no record's."""
    refs = page.snap.tensors
    if tensor is None or found is None or k >= len(refs) or (k < len(page.tensors) and page.tensors[k].shown.numel == 0
                                                              and page.tensors[k].note):
        return None  # no recorded tensor, or a value past the capture budget (its shape only)
    index = page.snap.index if k == 0 else None
    if found.canonical is None:
        return None
    if index is None or CORNER.fullmatch(index):
        return refs[k].name(places), found.canonical
    # the page shows the first batch item: the recorded tensor is the batch (its first item with a batch axis)
    if index == "[0]":
        return (refs[k].name(places),
                tensor if tensor.dim() == found.canonical.dim() + 1 else found.canonical.unsqueeze(0))
    # any other slice (one position's logits) is not the recorded tensor: checks needing it are not checkable
    return None


def _unreadable(page: SnapshotReading, k: int, places: dict[str, str]) -> str:
    """Why the page's captured ``k``-th tensor cannot be read in the catalogue's layout ("": it can, or none was)."""
    if (not page.captured or k >= len(page.tensors)
            or _filed(page, k, page.tensors[k].shown.tensor, page.layouts[k], places) is not None):
        return ""
    t = page.tensors[k]
    return (t.note if t.shown.numel == 0 and t.note
            else page.layouts[k].note or "its shape cannot be read as the catalogue's")


def own_tensors(page: SnapshotReading, places: dict[str, str]) -> dict[str, torch.Tensor]:
    """The page's own captured tensors (the hit it shows) under their record names."""
    return dict(filed for k, t in enumerate(page.tensors)
                if (filed := _filed(page, k, t.shown.tensor, page.layouts[k], places)))


def catalogue_source(catalogue: Report, pages: list[SnapshotReading],
                     hit: int) -> tuple[TensorDict | None, dict[str, TensorLabel]]:
    """The captured tensors as a ``transformer_trace.sources.TensorDict`` under the catalogue's record names (pass k of
    a loop under layer k's names), in the catalogue's layouts (as the reading read each hit's value); and record name
    -> snapshot label (what checks need)."""
    passes = _passes(catalogue, pages)
    shown_places = pass_places(catalogue, hit, passes) or pass_places(catalogue, 1, passes)
    if shown_places is None:
        return None, {}
    tensors: dict[str, torch.Tensor] = {}
    # record name -> the snapshot (and pass) its tensor came from, or would come from
    labels: dict[str, TensorLabel] = {}
    for page in pages:
        refs = getattr(page.snap, "tensors", ())
        variables = page.snap.variable.split(", ") if len(refs) > 1 else []
        for k, ref in enumerate(refs):
            index = getattr(page.snap, "index", None)
            sliced = k == 0 and index not in (None, "[0]") and not CORNER.fullmatch(index)
            which = variables[k] if len(variables) == len(refs) else ""  # one of a snapshot's several tensors
            labels.setdefault(ref.name(shown_places), TensorLabel(page.label, sliced=True) if sliced
                              else TensorLabel(page.label, which, unreadable=_unreadable(page, k, shown_places)))
        for k, values in enumerate(page.hit_values):
            for h, tensor in enumerate(values, 1):
                if ((places := pass_places(catalogue, h, passes)) is not None
                        and (filed := _filed(page, k, tensor, page.hit_layouts[k][h - 1], places))):
                    tensors[filed[0]], labels[filed[0]] = filed[1], TensorLabel(
                        page.label, at_pass=h if len(values) > 1 else None)
    shown: set[str] = set()
    # the hits the pages show, under the shown layer's names, win; the first snapshot showing a record point owns it
    for page in pages:  # a line that ran fewer times than ``hit`` shows its last pass: filed under that pass's names
        for name, tensor in own_tensors(page, _shown_places(page, catalogue, pages, hit) or shown_places).items():
            if name not in shown:
                tensors[name], labels[name] = tensor, TensorLabel(page.label)
                shown.add(name)
    return TensorDict(tensors, places=shown_places), labels
