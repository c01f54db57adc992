"""A check bound to a marked line's module calls (trace/reading/weights.py ``Bound``) run, and its result said in the
student's terms: where it fails on the snapshot's input but passes on the call's own input, the step was computed
from another tensor; and the names the binding gave what the calls stood in for (the catalogue's module
``blocks.0.attn.proj``, a call's input ``blocks.0.attn.concat@Linear.input``) are said as what the student's line
did (``the Linear your line called``, ``the input of the Linear your line called``, ``the projection with
`p["proj"]```), as checking.py ``in_users_terms`` then says the captured tensors by the student's variables."""

from __future__ import annotations

import dataclasses
import re

from transformer_trace.checks import CheckResult
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
        if own.passed and (between := _normalised_between(bound)):
            return dataclasses.replace(own, detail=f"{own.detail}; {between}")
        if own.passed:
            message = ("applied to the input it was actually called with, the module reproduces this step: it was "
                       "computed from another tensor than the snapshot that should feed it")
            if result.evidence is None:  # the diagnosis first, as evidence of its own
                result = dataclasses.replace(result, detail=f"{message}; {result.detail}",
                                             evidence=Evidence(BUG_FORM, "computed from another tensor", message))
            else:
                result = dataclasses.replace(result, detail=f"{result.detail}; {message}")
    return result


def _normalised_between(bound: Bound) -> str:
    """Where the module's own input is a LayerNorm of the snapshot that should feed it (a final LayerNorm applied after
    the class token was taken, to one row instead of all): that, in words; else ""."""
    source = bound.source
    if type(bound.own_input) is not type(bound.check):  # read from the sum of several snapshots: nothing to compare
        return ""
    field_name = next(name for name, value in vars(bound.own_input).items() if value != getattr(bound.check, name))
    fed, own = getattr(bound.check, field_name), getattr(bound.own_input, field_name)
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
