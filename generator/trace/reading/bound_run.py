"""A check bound to a marked line's module calls (trace/reading/weights.py ``Bound``) run, and its result said in the
student's terms: where it fails on the snapshot's input but passes on the call's own input, the step was computed
from another tensor; and the names the binding gave what the calls stood in for (the catalogue's module
``blocks.0.attn.proj``, a call's input ``blocks.0.attn.concat@Linear.input``) are said as what the student's line
did (``the Linear your line called``, ``the input of the Linear your line called``, ``the projection with
`p["proj"]```), as checking.py ``in_users_terms`` then says the captured tensors by the student's variables."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import torch

from transformer_trace.checks import CheckResult, close
from transformer_trace.checks.evidence import BUG_FORM, Evidence
from transformer_trace.checks.normalisation import fitted_layer_norm
from transformer_trace.sources import NotCheckable, Ref
from transformer_trace.trace.reading.users_names import said_throughout
from transformer_trace.trace.reading.weights import Bound

# a tensor a module call of the line gave, named by the binding "<record name>@<the module's class>.<input|weight>"
CALL_TENSOR = re.compile(r"(?<![\w.])[\w.{}]+@(\w+)\.(input|weight)(?![\w.])")


def run_bound(bound: Bound) -> CheckResult:
    """The bound check's result; where it fails on the snapshot's input but passes on the call's own input, it says
    that the step was computed from another tensor."""
    result = bound.check.run(bound.source)
    if result.checkable and bound.note:
        result = dataclasses.replace(result, detail=f"{result.detail} (read: {bound.note})")
    if bound.also:  # judged by the checks that could run, as a page is
        return CheckResult.combined([result, *(check.run(bound.source) for check in bound.also)], judge_checkable=True)
    if result.status == "failed" and bound.own_input is not None:
        own = bound.own_input.run(bound.source)
        if own.passed and (between := _normalised_between(bound) or _scaled_operands(bound)
                           or _tokens_changed(bound)):
            return dataclasses.replace(own, detail=f"{own.detail}; {between}")
        if own.passed and (derived := _fed_by_a_derived_step(bound)):
            # the step that should feed it is no capture but the catalogue's relation applied to captured ones: the
            # module's own input may be that step in a form the relation does not know (DeepNorm's α·x + y for x + y)
            message = (f"applied to the input it was actually called with, the module reproduces this step; that input "
                       f"is not {derived} as derived from the captured steps (a form of it the derivation does not "
                       "know, or a wrong one: the numbers do not tell them apart)")
            result = dataclasses.replace(result, detail=f"{result.detail}; {message}")
        elif own.passed:
            message = ("applied to the input it was actually called with, the module reproduces this step: it was "
                       "computed from another tensor than the snapshot that should feed it")
            if result.evidence is None:  # the diagnosis first, as evidence of its own
                result = dataclasses.replace(result, detail=f"{message}; {result.detail}",
                                             evidence=Evidence(BUG_FORM, "computed from another tensor", message))
            else:
                result = dataclasses.replace(result, detail=f"{result.detail}; {message}")
    return result


def _fed_and_own(bound: Bound) -> list[tuple[Any, Any]]:
    """Per field in which the check and its twin on the module's own input differ: (what the check reads, what the
    twin reads); none where there is no twin of the check's own class (read from the sum of several snapshots)."""
    own = bound.own_input
    if own is None or type(own) is not type(bound.check):
        return []
    return [(getattr(bound.check, name), value) for name, value in vars(own).items()
            if value != getattr(bound.check, name)]


def _tokens_changed(bound: Bound) -> str:
    """Where the step that should feed the module holds another number of tokens than the module's own input, each
    token as wide (tokens merged or cut between them: ToMe), that, in words: no other tensor, the same stream
    shortened; else ""."""
    source = bound.source
    for fed, value in _fed_and_own(bound):
        if not isinstance(fed, Ref) or not isinstance(value, Ref) or not (source.has(fed) and source.has(value)):
            continue
        want, got = source.t(fed).shape, source.t(value).shape
        if len(want) == len(got) and want[0] == got[0] and want[-1] == got[-1] and want[1:-1] != got[1:-1]:
            return (f"its input, {tuple(got)}, holds another number of tokens than {source.name(fed)}, "
                    f"{tuple(want)}: tokens merged or cut between them")
    return ""


def _scaled_operands(bound: Bound) -> str:
    """Where the check sums captured operands and the module's own input is their sum with each scaled by a constant,
    none 0 (DeepNorm's LayerNorm(α·x + sublayer(x)): the stream scaled by α = (2N)^¼), that, in words; else ""."""
    source = bound.source
    for operands, value in _fed_and_own(bound):
        if not isinstance(operands, tuple) or len(operands) < 2 or not isinstance(value, tuple) or len(value) != 1 \
                or not all(isinstance(r, Ref) and source.has(r) for r in (*operands, *value)):
            continue
        given = source.t(value[0]).double().flatten()
        parts = [source.t(r).double().flatten() for r in operands]
        if any(part.shape != given.shape for part in parts):
            return ""
        basis = torch.stack(parts, dim=1)
        scales = torch.linalg.lstsq(basis, given.unsqueeze(1)).solution.flatten()
        fits = close(given, basis @ scales, "")[0]
        if not fits or any(abs(float(c)) < 1e-3 for c in scales) or all(abs(float(c) - 1) < 1e-3 for c in scales):
            return ""
        said = " + ".join(f"{float(c):.4g}·{source.name(r)}" for c, r in zip(scales, operands))
        return (f"its input is {said}: the operands summed, each scaled by a constant, as DeepNorm scales the "
                "stream (α = (2N)^¼), fitted")
    return ""


def _fed_by_a_derived_step(bound: Bound) -> str:
    """The name of the step the module should have been fed, where no marker captured it (derived from captured
    steps: the run lists the captured ones, ``ran``); else ""."""
    source, pairs = bound.source, _fed_and_own(bound)
    ran = getattr(getattr(source, "run", None), "ran", None)
    if not pairs or ran is None:
        return ""
    fed = [checked for checked, _ in pairs]
    derived = [source.name(ref) for ref in fed if isinstance(ref, Ref) and source.name(ref) not in ran]
    return derived[0] if derived and len(derived) == len(fed) else ""


def _normalised_between(bound: Bound) -> str:
    """Where the module's own input is a LayerNorm of the snapshot that should feed it (a final LayerNorm applied after
    the class token was taken, to one row instead of all): that, in words; else ""."""
    source, pairs = bound.source, _fed_and_own(bound)
    if not pairs:  # no twin of the check's class (read from the sum of several snapshots): nothing to compare
        return ""
    fed, own = pairs[0]
    if not isinstance(fed, Ref) or not source.has(fed) or source.t(fed).shape != source.t(own).shape:
        return ""
    try:
        _, normalised, fitted = fitted_layer_norm(source.t(own), source.t(fed), source.name(fed))
    except NotCheckable:  # one or two rows: a gain and bias per feature fit anything: a LayerNorm cannot be ruled out
        return (f"its input differs from {source.name(fed)} by what may be a LayerNorm applied after it (too few rows "
                "to tell)")
    return f"its input is a LayerNorm of {source.name(fed)}, recognised: {fitted}" if normalised else ""


def in_callers_terms(result: CheckResult, bound: Bound) -> CheckResult:
    """``result`` with the names its binding made said as what the student's line did, in every text of it, passed,
    failed or not checkable (users_names.py ``said_throughout``): what the terminal, the JUnit file and the pages
    show."""
    def said(text: str) -> str:
        for name, words in sorted(bound.said, key=lambda pair: len(pair[0]), reverse=True):  # the longest first
            text = re.sub(rf"(?<![\w.@]){re.escape(name)}(?![\w.@])", words.replace("\\", "\\\\"), text)
        return CALL_TENSOR.sub(lambda found: f"the {found[2]} of the {found[1]} your line called", text)

    return said_throughout(result, said)
