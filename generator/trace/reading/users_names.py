"""A check's result said in the student's names (issue 40 point 8, issue 41 point 6): every text of it, passed, failed,
unrecognised or not checkable, its claim, its detail, its diagnosis and the results it combines, with the catalogue's
record names (``blocks.0.attn.scores``) replaced by the student's variable and the snapshot that shows it
(``att (G11)``). The catalogue's name stays only where the trace has nothing else for it: a step nobody marked
(derived: its readers' details say what it was derived from), or a plain word ("mask"), which would be replaced in the
prose too. The names a line's module calls gave are said the same way (bound_run.py ``in_callers_terms``)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping

from transformer_trace.checks import CheckResult
from transformer_trace.trace.reading.records import TensorLabel


def said_throughout(result: CheckResult, said: Callable[[str], str]) -> CheckResult:
    """``result`` with ``said`` applied to each of its texts (its claim, its detail, its diagnosis) and its parts';
    ``result`` itself where that changes nothing."""
    parts = tuple(said_throughout(part, said) for part in result.parts)
    evidence = result.evidence
    if evidence is not None:
        evidence = dataclasses.replace(evidence, message=said(evidence.message))
    name, detail = said(result.name), said(result.detail)
    if (name, detail, parts) == (result.name, result.detail, result.parts) and evidence == result.evidence:
        return result
    return dataclasses.replace(result, name=name, detail=detail, parts=parts, evidence=evidence)


def in_users_terms(result: CheckResult, labels: Mapping[str, TensorLabel], variables: Mapping[str, str]) -> CheckResult:
    """``result`` with the catalogue's record names said as the user's variables and the snapshot that shows them
    (``att (G11)``): ``labels``, what each record name comes from; ``variables``, by snapshot label, the variable its
    marked line holds the step in (the value the step reads, not every value a ``def`` line captured)."""
    def said(text: str) -> str:
        for name in sorted(labels, key=len, reverse=True):  # the longest first: one name may begin another
            label = labels[name]
            variable = label.variable or variables.get(label.snapshot, "")
            # a record name that is a plain word ("mask") would be replaced in the prose too: dotted or snake names only
            if name in text and variable and not label.derived_from and any(c in name for c in "._"):
                literal = f"{variable} ({label.snapshot})".replace("\\", "\\\\")  # a replacement, read as written
                text = re.sub(rf"(?<![\w.]){re.escape(name)}(?![\w.])", literal, text)
        return text

    return said_throughout(result, said)
