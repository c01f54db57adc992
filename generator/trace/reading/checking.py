"""A traced script's verdicts: the catalogue's own typed checks (generator/checks.py), the ones its snapshots declare,
run on the traced run (trace/reading/run.py ``TracedRun``, built from the capture's one reading before any check runs),
each through the view of the hit its page shows: the captured tensors under the catalogue's record names (filed once,
in capture_reading.py). Hit k of a line in the layer loop is filed under layer k's names, so a check that reads
``{block_prev}`` (the previous layer's output) compares layer k's input with layer k − 1's output; placeholders that
name one layer (``{block_last}``) are filled from the layers the script's loop ran (``RunOptions.NAMED_PASSES``).
Checks that need weights no marked line's module call gave, or the run's inputs, are not checkable; a page is judged by
the checks that could run."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from functools import partial
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import torch

from transformer_trace.checks import (
    FAILED, Check, NOT_CHECKABLE, PASSED, CheckResult, UnfittableWeights, close, judged_at, tolerance,
)
from transformer_trace.checks.base import LOW_PRECISION
from transformer_trace.checks.base import needs_evidence
from transformer_trace.checks.rotary import ROTATED
from transformer_trace.checks.evidence import BUG_FORM, Evidence
from transformer_trace.sources import MissingTensor, NoInput, NoWeights, NotCheckable, TensorDict, TensorSource
from transformer_trace.trace.reading.verify import LayoutStatus
from transformer_trace.trace.reading.added_then_normed import added_then_normed
from transformer_trace.trace.reading.another_lines_input import another_lines_input
from transformer_trace.trace.reading.eval_dropout import attention_dropout_judged
from transformer_trace.trace.reading.head_input import class_kept_last, head_input_checked
from transformer_trace.trace.reading.kv_inputs import k_and_v_inputs_differ
from transformer_trace.trace.reading.derived import derive_missing
from transformer_trace.trace.reading.rotary_positions import plain_form_missed, rotary_note, with_rotary
from transformer_trace.trace.reading.functional_weights import functional_projection
from transformer_trace.trace.reading.difference_context import difference_bound
from transformer_trace.trace.reading.gated_mlp import activated_gate_bound, gated_bound, gated_down_bound
from transformer_trace.trace.reading.activated_calls import activated_calls
from transformer_trace.trace.reading.log_probs import log_softmax_of_call
from transformer_trace.trace.reading.layered_calls import layered_calls
from transformer_trace.trace.reading.sublayer_alone_normed import sublayer_alone_normed
from transformer_trace.trace.reading.sublayer_then_normed import sublayer_then_normed
from transformer_trace.trace.reading.attention_sources import kv_from_another_input, positions_added_twice
from transformer_trace.trace.reading.misfed import misfed_named
from transformer_trace.trace.reading.stack_layout import batch_axes_swapped
from transformer_trace.trace.reading.sublayer_input import stream_not_normalised
from transformer_trace.trace.reading.batch_mean import averaged_over_batch
from transformer_trace.trace.reading.padding_mask import padding_mask_read
from transformer_trace.trace.reading.head_modules import heads_of_their_own_modules
from transformer_trace.trace.reading.head_rows import heads_on_rows
from transformer_trace.trace.reading.experts import mixture_of_experts
from transformer_trace.trace.reading.norm_of_another import norm_of_another
from transformer_trace.trace.reading.image_patches import patches_of_the_image
from transformer_trace.trace.reading.scaled_queries import queries_scaled_where_taken
from transformer_trace.trace.reading.last_position import at_last_position, calls_at_last_position, wrong_row_read
from transformer_trace.trace.reading.dropout import said_dropout
from transformer_trace.trace.reading.declared import meaning_of
from transformer_trace.trace.reading.records import OwnRecords, TensorLabel
from transformer_trace.trace.reading.parts import evidence_in_parts
from transformer_trace.trace.reading.patch_grid import grid_bound
from transformer_trace.trace.reading.residuals import sublayer_bound
from transformer_trace.trace.reading.same_tensors import same_tensor
from transformer_trace.trace.reading.stand_ins import StandIn, reader_failed, readers
from transformer_trace.trace.reading.bound_run import in_callers_terms, run_bound
from transformer_trace.trace.reading.users_names import in_users_terms
from transformer_trace.trace.reading.weights import Bound, LineCalls
from transformer_trace.trace.reading.values_skip import values_added_taken, with_values_added, wrong_skip_named

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.catalogue import Report
    from transformer_trace.trace.reading.capture_reading import CaptureReading
    from transformer_trace.trace.reading.pages import SnapshotReading
    from transformer_trace.trace.reading.run import TracedRun


log = logging.getLogger(__name__)


class UnboundDimensions(NotCheckable):
    """A captured tensor whose named shape uses dimensions no captured tensor bound: it cannot be read in the
    catalogue's layout, so no check can be trusted on it (a shape error would read as a failure)."""

    @classmethod
    def of(cls, dims: tuple[str, ...], shape: tuple[int, ...], named: tuple[str, ...]) -> UnboundDimensions:
        return cls(f"the dimension{'s' if len(dims) > 1 else ''} {', '.join(dims)} bound",
                   f"no captured tensor shows {'their sizes' if len(dims) > 1 else 'its size'}, so your shape {shape} "
                   f"cannot be read as ({', '.join(named)})")


def needed(lack: NotCheckable, labels: dict[str, TensorLabel], page: SnapshotReading | None = None,
           places: Mapping[str, str] | None = None) -> str:
    """What a not checkable check lacked, in the user's terms: a snapshot to capture, a tensor no snapshot shows (what
    the model declares it to be, read at ``places``, and that the line computing it would show it), weights a trace
    does not have (on a captured ``page``: the weights its variable was computed with and its marked line, never the
    catalogue's module name, which the student's code does not have)."""
    if isinstance(lack, MissingTensor):
        label = labels.get(lack.missing)
        if label is not None:
            return label.needed
        meaning = meaning_of(page.snap, page.report, lack.missing, places) if page and places is not None else ""
        return (f"{meaning} (no marked line of yours shows it: mark the line that computes it)" if meaning
                else f"{lack.missing}, which no marked line of yours shows")
    if isinstance(lack, NoWeights) and page is not None and page.marked:
        return weights_needed(lack, page)
    if isinstance(lack, NoWeights):
        return f"the model's weights ({lack.missing}), which a trace does not capture"
    if isinstance(lack, NoInput):
        return f"the run's {lack.missing}, which a trace does not know"
    if isinstance(lack, UnfittableWeights):
        return "the LayerNorm's weights (with fewer than 3 positions a fitted gain and bias prove nothing)"
    return f"{lack.missing} ({lack.why})" if lack.why else lack.missing


def weights_needed(lack: NoWeights, page: SnapshotReading) -> str:
    """Weights a captured step's check lacked, said with the student's variable and marked line: "the weights
    `ff_out` was computed with, which a trace reads only from ... (vit.py:62) ..."; a parameter that is not a module's
    weight or bias by its kind (``parameter class_token``: "the class token parameter")."""
    kind, _, name = lack.missing.partition(" ")
    last = name.rsplit(".", 1)[-1]
    what = "weights" if kind != "parameter" or last in ("weight", "bias") else f"{last.replace('_', ' ')} parameter"
    variable, at = page.main.variable, page.main.marked_at
    return (f"the {what} `{variable}` was computed with, which a trace reads only from the nn.Module calls of its "
            f"marked line{f' ({at})' if at else ''} and the module attributes that line reads: it made none that "
            "gives them")


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


def judge(run: TracedRun, reading: CaptureReading) -> dict[int, Judgement]:
    """Each snapshot's judgement by its declared checks (by snapshot number), run on the traced run, which exists before
    them (trace/reading/run.py ``traced_run``): each check reads it as its marked line sees it (``TracedRun.seen_from``:
    the pass its page shows, and the steps nobody marked, derived from the run's tensors), its weights from the modules
    the run's marked lines called (``run.called``); ``labels``: what each record name comes from. The queries and keys
    are read as captured; only where an attention check then found no plain form is a rotation fitted (rotary
    positions: rotary_positions.py), and, where one fits, the run judged again with them rotated as the attention
    read them."""
    readings, labels, dims = list(reading.snapshots), dict(reading.labels), dict(reading.dims)
    source = run.catalogued
    # the checks also read what the steps nobody marked derive to (not the run's tensors: nothing shows them)
    results, derived = _results(run, reading, source, labels)
    if source is not None and plain_form_missed(readings, results):
        rotated_source, rotated = with_rotary(readings, source, dims)
        if rotated:
            labels.update({name + ROTATED: TensorLabel(str(rotary)) for name, rotary in rotated.items()})
            results, derived = _results(run, reading, rotated_source, labels)
    if source is not None and (skipped := with_values_added(readings, results, source)) is not None:
        results = values_added_taken(readings, results, _results(run, reading, skipped, labels)[0])  # T2T's skip
        results = wrong_skip_named(readings, results, source, lambda s: _results(run, reading, s, labels)[0])
    results = attention_dropout_judged(readings, results, reading.modules_training)  # by the run's mode
    results = said_dropout(readings, results)  # training mode: what no form matched ran with dropout, not unrecognised
    results = misfed_named(readings, results, reading.misfed, dims)  # a cross-attention fed its queries as keys
    results = mixture_of_experts(readings, results)  # a mixture of experts in the MLP's place: said so
    results = stream_not_normalised(readings, results)  # a pre-norm block's sublayer given the stream itself
    results = batch_axes_swapped(readings, results)  # an nn.TransformerEncoder given the other layout than it reads
    results = kv_from_another_input(readings, results)  # a cross-attention's K or V not from the encoder's output
    results = positions_added_twice(readings, results)  # an attention's query or key given the positions twice
    results = norm_of_another(readings, results)  # a sublayer's LayerNorm given a LayerNorm of another stream
    results = patches_of_the_image(readings, results)  # flattened patches with no 4-D patches: read from the image
    results = queries_scaled_where_taken(readings, results)  # the 1/√hs applied where the queries are taken
    # a derived step's page says so only where a captured step's check read it (its detail names the derivation)
    said = " ".join(result.detail for snapshot in readings if snapshot.captured
                    for result in results[snapshot.snap.number])
    judged = {number: Judgement(tuple(found), CheckResult.combined(found, judge_checkable=True)) for number, found
              in results.items()}
    for snapshot in readings:
        roots = derived.get(snapshot.label, ())
        if roots and f"{snapshot.label} (derived from" in said:
            judged[snapshot.snap.number] = replace(judged[snapshot.snap.number], derived_from=roots)
    return judged


def _results(run: TracedRun, reading: CaptureReading, source: TensorDict | None, labels: dict[str, TensorLabel],
             ) -> tuple[dict[int, list[CheckResult]], dict[str, tuple[str, ...]]]:
    """Each snapshot's results on ``source`` (the run's tensors, the queries and keys as captured or as rotated), with
    the steps nobody marked derived from it, and the readers of one tensor compared; and, per snapshot label, the
    captured steps its tensor was derived from."""
    readings, dims = list(reading.snapshots), dict(reading.dims)
    derived: dict[str, tuple[str, ...]] = {}
    checked, read_labels = (source, labels) if source is None else _with_derived(readings, source, labels, derived,
                                                                                 dims)
    stand_ins: list[StandIn] = []
    # what the student named each step: the variable its line holds it in (a `def` line's first argument, not all)
    variables = {page.label: page.main.variable for page in readings if page.captured}
    with judged_at(captured_dtypes(readings)):  # half-precision tensors are judged at their own precision
        results = _check_pages(readings, run, reading.own, checked, read_labels, variables, stand_ins)
        _stand_ins_agree(reading.by_number, results, stand_ins)
        another_lines_input(reading.by_number, results, stand_ins)  # of two readers, which read another line's input
        k_and_v_inputs_differ(reading.by_number, results, stand_ins)  # two projections of one tensor given two
        head_input_checked(readings, results, stand_ins, checked,  # a head's input: the pooled token's claims
                           lambda found: in_users_terms(found, read_labels, variables), class_kept_last(reading))
    return results, derived


def captured_dtypes(pages: list[SnapshotReading]) -> set[torch.dtype]:
    return {t.shown.tensor.dtype for p in pages if p.captured for t in p.tensors
            if isinstance(getattr(t.shown, "tensor", None), torch.Tensor)}


def _stand_ins_agree(by_number: Mapping[int, SnapshotReading], results: dict[int, list[CheckResult]],
                     stand_ins: list[StandIn]) -> None:
    """Marked lines whose module calls read one catalogue tensor (the q, k and v projections of ln_1, each line calling
    its own Linear; or of a captured block input, a pre-norm's LayerNorm of it) read the same tensor: where all but
    one of three or more agree, the one that read another fails (K computed from another tensor than Q and V). Two
    that disagree do not tell which."""
    for name, read in readers(stand_ins).items():
        if len(read) < 3:
            continue
        found = [(by_number[number], index, tensor) for number, (index, tensor) in read.items()]
        for page, index, tensor in found:
            others = [(other, t) for other, _, t in found if other is not page]
            agree = all(same_tensor(t, others[0][1]) for _, t in others[1:])
            result = results[page.snap.number][index]
            # another layout of the same values (a Linear called on x.reshape(B * N, C)) is not told apart: no verdict
            if (not agree or result.status != PASSED or tensor.shape != others[0][1].shape
                    or same_tensor(tensor, others[0][1])):
                continue
            _, detail = close(tensor.double(), others[0][1].double(), "this call's input vs theirs")
            message = (f"your step was computed from another tensor than {' and '.join(o.label for o, _ in others)} "
                       f"read, where the catalogue has them all read one, {name}: {detail}")
            results[page.snap.number][index] = reader_failed(result, "computed from another tensor", message)


def _check_pages(pages: list[SnapshotReading], run: TracedRun, own: Mapping[int, OwnRecords],
                 checked: TensorDict | None, read_labels: dict[str, TensorLabel], variables: dict[str, str],
                 stand_ins: list[StandIn]) -> dict[int, list[CheckResult]]:
    """Each snapshot's results, one per declared check, in the user's terms (by snapshot number). ``own``: each captured
    snapshot's own tensors at the hit its page shows, as the reading filed them; ``variables``: each captured step's
    variable names, by label."""
    results = {}
    # a snapshot is judged on its own capture, even where an earlier one shows the same record point: the run as each
    # captured page's marked line sees it (its own tensors under its hit's names), before any check runs
    layouts = {page.snap.number: page.layout for page in pages if page.captured}  # a last position's: its rows there
    views = {number: run.seen_from(at_last_position(layouts.get(number), {**checked.tensors, **mine.tensors}),
                                   dict(mine.places))
             for number, mine in own.items() if checked is not None}
    labels = {number: page_labels(page, own[number].tensors, read_labels)
              for page in pages if (number := page.snap.number) in views}
    # then every page's shape read, once, before any module call is bound: the pages none of whose checks can run
    refused = {number: _refused(page, views[number], labels[number])
               for page in pages if (number := page.snap.number) in views}
    # then the module calls the marked line made of each page its checks can run on: one binder for them (weights.py)
    lines = {number: LineCalls(calls_at_last_position(page.layout, page.calls), views[number], page.main_as_called,
                               run.called, page.call_order)
             for page in pages if (number := page.snap.number) in views and refused[number] is None}
    # then every page's checks bound to what its line's calls give them, before any check of any page runs
    ready = {number: _ready(page, views[number], refused[number], run.called, lines.get(number))
             for page in pages if (number := page.snap.number) in views}
    for page in pages:
        number = page.snap.number
        if number in views:
            found = page_checks(page, views[number], labels[number], ready[number], stand_ins)
            found = _another_position(page, found, run, {**checked.tensors, **own[number].tensors},
                                      dict(own[number].places), labels[number]) if checked is not None else found
        else:
            found = page_checks(page, checked, read_labels,
                                _ready(page, checked, _refused(page, checked, read_labels)))
        results[number] = [in_users_terms(result, read_labels, variables) for result in found]

    in_terms = partial(in_users_terms, labels=read_labels, variables=variables)
    # one module per head: a concatenation of heads read from its per-head lines' hits (head_modules.py); logits from
    # heads on rows the catalogue's check cannot read (head_rows.py)
    for reading, refine in (("one module per head", heads_of_their_own_modules), ("heads on rows", heads_on_rows)):
        try:  # a reading that only refines verdicts never costs the report (round twenty-two's GQA ViT: it did)
            results = refine(pages, results, views, in_terms)
        except Exception as exc:  # noqa: BLE001 - the pages as their own checks judged them, said in one line
            log.warning("trace: the %s reading was left out (%s: %s); those steps are as their own checks judged "
                        "them", reading, type(exc).__name__, exc)
    return results


def _another_position(page: SnapshotReading, found: list[CheckResult], run: TracedRun,
                      tensors: Mapping[str, torch.Tensor], places: dict[str, str],
                      labels: dict[str, TensorLabel]) -> list[CheckResult]:
    """A step read as the last position's row (last_position.py) none of whose checks passed there, but all pass at
    another position: "the wrong position" (``h[:, 0]`` where the next token is scored from ``h[:, -1]``); else
    ``found`` as it is."""
    if not page.layout or not page.layout.last_position or not found:
        return found
    if all(r.passed for r in found):  # the row the line took tied to the last position of what it read
        return wrong_row_read(page, found, run.seen_from(tensors, places))
    if any(r.passed for r in found):
        return found
    assert page.layout.expected is not None  # a last position's layout has one
    for position in range(page.layout.expected[1] - 1):
        view = run.seen_from(at_last_position(page.layout, tensors, position), places)
        line = LineCalls(calls_at_last_position(page.layout, page.calls, position), view, page.main_as_called,
                         run.called, page.call_order)
        there = page_checks(page, view, labels, _ready(page, view, _refused(page, view, labels), run.called, line))
        if there and all(r.passed for r in there):
            said = (f"your {page.main.variable or page.label} is position {position}'s row, not the last "
                    f"position's ({page.layout.expected[1] - 1}), which the next token is scored from: "
                    + "; ".join(f"{r.name}: {r.detail}" for r in there))
            return [CheckResult(name=found[0].name, passed=False, detail=said,
                                evidence=Evidence(BUG_FORM, "the wrong position", said))]
    return found


def page_labels(page: SnapshotReading, own: Mapping[str, torch.Tensor],
                labels: dict[str, TensorLabel]) -> dict[str, TensorLabel]:
    """What each record name a page's checks read comes from: its own tensors from the page itself."""
    return {**labels, **dict.fromkeys(own, TensorLabel(page.label))}


def _with_derived(pages: list[SnapshotReading], source: TensorDict, labels: dict[str, TensorLabel],
                  derived: dict[str, tuple[str, ...]],
                  dims: dict[str, int]) -> tuple[TensorDict, dict[str, TensorLabel]]:
    """``source`` with the tensors of steps nobody marked derived from the captured ones (trace/reading/derived.py),
    and the labels that say so; ``derived`` gets, per snapshot label, the captured steps its tensor was derived from."""
    tensors, read_labels = dict(source.tensors), dict(labels)
    def label_of(label: str, read: list[TensorLabel]) -> TensorLabel:
        return TensorLabel(label, derived_from=tuple(dict.fromkeys(map(str, read))))

    derived.update(derive_missing(pages, tensors, read_labels, dict(source.places), label_of, dims))
    return source.with_tensors(tensors), read_labels


def _not_checkable(name: str, detail: str, missing: tuple[str, ...] = (),
                   lacks: tuple[NotCheckable, ...] = ()) -> CheckResult:
    return CheckResult(name=name, passed=False, detail=detail, status=NOT_CHECKABLE, missing=missing, lacks=lacks)


@dataclass(frozen=True)
class Ready:
    """A page's declared checks ready to run: each with its claim and what its marked line's module calls give it
    (``Bound``, or None), bound before any check runs; or, ``refused``, why none can run on it (not captured, a shape
    no layout reads, no claim a captured tensor could test), one result per check."""

    refused: tuple[CheckResult, ...] | None
    bound: tuple[tuple[Check, str, Bound | None], ...] = ()


def page_checks(page: SnapshotReading, source: TensorDict | None, labels: dict[str, TensorLabel], ready: Ready,
                stand_ins: list[StandIn] | None = None) -> list[CheckResult]:
    """The snapshot's declared checks run on ``source``, each a ``CheckResult``, as ``ready`` (``_ready``) bound them;
    what a not checkable one needs is said in the user's terms (a snapshot to capture, the weights a trace does not
    have); a failure without evidence is unrecognised (checks/base.py ``needs_evidence``: code the tool has never seen
    is not called wrong for a form it does not know). ``stand_ins`` collects (page, the result's index, a record name,
    the module call's input that stood in for it: _stand_ins_agree)."""
    found = list(ready.refused) if ready.refused is not None else _run_checks(page, source, labels, ready, stand_ins)
    return [needs_evidence(result) for result in found]


def _claims(page: SnapshotReading) -> tuple[tuple[Check, ...], list[str]]:
    """The page's declared checks, and each one's claim in words."""
    checks = tuple(getattr(page.snap, "checks", ()))
    return checks, [c.claim_in_words() for c in checks]


def _ready(page: SnapshotReading, source: TensorDict | None, refused: list[CheckResult] | None,
           known: dict[str, Any] | None = None, line: LineCalls | None = None) -> Ready:
    """The page's checks bound to what its marked line's module calls give them (``line``, its binder, where made
    already; ``known``, the modules other lines called), or why none can run (``refused``: ``_refused``)."""
    checks, claims = _claims(page)
    if refused is not None or source is None:
        return Ready(tuple(refused or ()))
    # the calls (already in the run's layout, run_layout.py) read as the step where the step is permuted further
    order = page.call_order
    if not page.calls and not known:
        line = None  # no module call a check could read
    elif line is None:  # the module calls the marked line made, one binder for every check of the page
        line = LineCalls(page.calls, source, page.main_as_called, known, order)
    bound = []
    for check, claim in zip(checks, claims):
        # the weights and inputs those calls give the check, in the form it reads them
        # a post-norm sum made inside one call: its operands from what the line added, before the norm's own input
        found = added_then_normed(check, page.calls, source, page.main_as_called, order)
        found = found or layered_calls(check, page.calls, source, page.main_as_called)  # an MLP head on one line
        # a feed-forward on one line: the activation between its Linears read from both calls
        found = found or activated_calls(check, page.calls, source, page.main_as_called, order)
        found = found or log_softmax_of_call(check, page.calls, source, page.main_as_called, order)  # log-probs
        # a post-norm LayerNorm the line called on a sublayer's output alone: the residual dropped
        found = found or sublayer_alone_normed(check, page.calls, source, page.main_as_called, order,
                                                     page.run.as_called)
        # a post-norm block's end on one line calling its sublayer and LayerNorm, neither the sum nor the output marked
        found = found or sublayer_then_normed(check, page.calls, source, page.main_as_called, order)
        # fc2 of a gated MLP's hidden layer, where the catalogue claims fc2 of an activation of fc1 (checks/gated.py)
        found = found or gated_down_bound(check, page.calls, source, page.main_as_called, order)
        found = found or (check.bound_by(line) if line is not None else None)
        found = found or sublayer_bound(check, page.calls, source, page.main_as_called, order)
        found = found or grid_bound(check, page.calls, source)
        found = found or functional_projection(check, page.calls, source)
        found = found or gated_bound(check, page.calls, source, page.main_as_called, known)
        # a differential attention's context: the maps' difference the line read, times V (checks/differential.py)
        found = found or difference_bound(check, page.calls, source, page.main_as_called)
        # a gated MLP's gate where the catalogue claims fc1's output: marked after its activation (checks/gated.py)
        found = found or activated_gate_bound(check, page.calls, source, page.main_as_called, order)
        bound.append((check, claim, found))
    return Ready(None, tuple(bound))


def _refused(page: SnapshotReading, source: TensorDict | None,
             labels: dict[str, TensorLabel]) -> list[CheckResult] | None:
    """Why none of the page's checks can run, one result each (None: they can): read from its capture and its shape."""
    checks, claims = _claims(page)
    if not page.captured:
        return [_not_checkable(claim, "needs this snapshot captured") for claim in claims] or [_not_checkable("", "")]
    # a value that is no tensor refuses the checks where the catalogue reads it: not where it is an argument beyond
    # the step's tensors (``def forward(self, x, head_mask=None, output_attentions=False):``, x read, the rest None)
    read = page.tensors[:max(1, len(page.snap.tensors))]
    if any(t.shown.numel == 0 and t.note for t in read):
        return [_not_checkable("; ".join(claims), "; ".join(t.note for t in read if t.note))]
    layout = page.layout
    assert layout is not None, f"{page.label}: a captured snapshot read without its layout"
    if layout.mismatch:
        # a shape the catalogue's layouts do not read is no evidence: one batch item's one head in a loop over heads,
        # a slice of a tensor, are layouts too (a fresh implementation's per-head (N, hs) slices were called wrong so):
        # unrecognised (needs_evidence), the page's shape row saying it does not match
        if (batch_mean := averaged_over_batch(page, source)) is not None:  # a pooled mean over the wrong axis
            return [batch_mean]
        if (padding := padding_mask_read(page)) is not None:  # one flag per position where a (T, T) mask is named
            return [padding]
        return [CheckResult(name="; ".join(claims) or "shape", passed=False, status=FAILED,
                            detail=f"the shape {page.main.shown.shape} cannot be read as ({', '.join(page.shape)}): "
                            f"{layout.note}")]
    if layout.status is LayoutStatus.UNBOUND and layout.canonical is None and checks \
            and not layout.unbound:  # bound, but a part of the step only (one item's one head of a loop)
        parts, places = page.hit_values[0] if page.hit_values else (), dict(source.places) if source else {}
        return [evidence_in_parts(check, parts, places) or _not_checkable(claim, f"needs the whole step: {layout.note}")
                for check, claim in zip(checks, claims)]
    if layout.status is LayoutStatus.UNBOUND and layout.canonical is None and checks:
        lack = UnboundDimensions.of(layout.unbound, page.main.shown.shape, tuple(page.shape))
        return [_not_checkable(claim, f"needs {needed(lack, labels)}", (lack.missing,), (lack,)) for claim in claims]
    if source is None or not checks:
        return [_not_checkable("", "the catalogue makes no claim here that captured tensors could test")]
    return None


def _run_checks(page: SnapshotReading, source: TensorDict | None, labels: dict[str, TensorLabel], ready: Ready,
                stand_ins: list[StandIn] | None) -> list[CheckResult]:
    assert source is not None, "a page whose checks are ready reads a source"
    results: list[CheckResult] = []
    for check, claim, bound in ready.bound:
        try:
            with _judged_with_calls(page):
                try:
                    result = in_callers_terms(run_bound(bound), bound) if bound is not None else check.run(source)
                except (RuntimeError, ValueError, IndexError):
                    if bound is None or not bound.stood_in:
                        raise
                    # a module call's input in another layout than the tensor it stands in for (a Linear called on
                    # x.reshape(B * N, C)): ours to read, not the script's error; the check without it
                    bound, result = None, check.run(source)
        except (RuntimeError, ValueError, IndexError):  # shapes that do not fit the claim at all: a form not known
            results.append(CheckResult(name=claim, passed=False, detail=_form_unknown(
                check if bound is None else bound.check, source if bound is None else bound.source)))
            continue
        read = bound.check.inputs() if bound is not None else check.inputs_read(source)  # a call's tensors: no label
        reads = [labels[name] for name in dict.fromkeys(source.name(ref) for ref in read) if name in labels]
        # a loop's wiring, or steps nobody marked: say which hits it compared, what it derived
        if result.checkable and any(label.at_hit or label.derived_from for label in reads):
            result = replace(result, detail=f"{result.detail} (read: {', '.join(map(str, reads))})")
        if result.checkable and (rotated := rotary_note([source.name(ref) for ref in read], labels)):
            result = replace(result, detail=f"{result.detail} ({rotated})")
        if not result.checkable:
            lacks = result.lacks or tuple(MissingTensor(m) for m in result.missing)
            needs = list(dict.fromkeys(needed(lack, labels, page, source.places) for lack in lacks))
            # phrases with commas of their own: semicolons
            what = ("; " if any(", " in n for n in needs) else ", ").join(needs)
            result = _not_checkable(claim, f"needs {what}", result.missing, lacks)
        if stand_ins is not None and bound is not None:
            stand_ins += [(page.snap.number, len(results), name, tensor) for name, tensor in bound.stood_in
                          if tensor is not None]
        results.append(result)
    return results


def _form_unknown(check: Check, source: TensorSource) -> str:
    """What a page says where the tensors' shapes fit no form the check knows: the shapes it read, not the error they
    raised (a form the checks do not know is no evidence of a bug)."""
    refs = dict.fromkeys(ref for ref in check.inputs() if source.has(ref))
    shapes = ", ".join(f"{source.name(ref)} {tuple(source.t(ref).shape)}" for ref in refs)
    return f"a form the checks do not know: the shapes read ({shapes}) fit none of the forms of the claim together"


def _judged_with_calls(page: SnapshotReading) -> Any:
    """A module call of the page's line that ran in half precision (autocast), its result cast back: the page's checks
    judged at that precision too, where it is coarser than the one they run at."""
    dtypes = {t.dtype for call in page.calls for t in (*call.inputs, *call.outputs, *call.params.values())
              if isinstance(t, torch.Tensor)}
    coarser = [dtype for dtype in dtypes if LOW_PRECISION.get(dtype, 0.0) > tolerance()]
    return judged_at(coarser) if coarser else contextlib.nullcontext()
