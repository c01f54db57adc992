"""An attention that adds its values to its output: the skip of a Tokens-to-Token ViT's token transformer (Yuan et al.
2021, `x = v + x` inside the attention module, where the width changes and no residual goes around it), which lanl's
T2T-ViT keeps in every block's attention too. The marked output projection (S15) is the projection alone; what the
block adds to its stream is S15 plus V with its heads merged, so the residual sums (S16, S19) fit no form as the
catalogue names their operands: unrecognised.

Tried only where a captured sum of the attention's output failed or was unrecognised: the run judged again with
every layer's attention output read as the captured output plus the captured values, heads merged ((B, h, N, hs) to
(B, N, h·hs)); a step unrecognised before (or red: "LayerNorm of the wrong tensor" was read without this form) whose
every check that runs passes so takes those results, said so (``with_values_added``, ``values_added_taken``). The
output projection's own step keeps its own tensor (a page reads its own capture first), so it is still checked as the
projection. A skip of another term is a bug form where it fits exactly (``wrong_skip_named``): V reshaped as it lies,
its heads not moved, or the queries merged."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import torch

from transformer_trace.checks.base import FAILED, PASSED, UNRECOGNISED, CheckResult
from transformer_trace.checks.evidence import BUG_FORM, Evidence
from transformer_trace.sources import TensorDict

ADDED = "the attention's output read with its values added, V's heads merged: the skip of a Tokens-to-Token attention"


def _attention_refs(pages: Sequence[Any], operand: str = "v_heads") -> tuple[str, str] | None:
    """(the attention output's record template, the per-head values' (``operand``: or the queries', "q")), from the
    catalogue's checks: the context's check names them, the output projection's check names the context as its
    heads."""
    contexts = {str(page.snap.tensors[0]): str(getattr(check, operand)) for page in pages for check in page.snap.checks
                if getattr(check, "v_heads", None) is not None and getattr(check, operand, None) is not None
                and page.snap.tensors}
    for page in pages:
        for check in page.snap.checks:
            heads = getattr(check, "heads", None)
            if heads is not None and str(heads) in contexts and page.snap.tensors:
                return str(page.snap.tensors[0]), contexts[str(heads)]
    return None


def _pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"\{(\w+)\}", template)
    return re.compile("".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>.+?)" for i, part in enumerate(parts))
                      + r"\Z")


def _reads(check: Any, template: str) -> bool:
    """Whether ``check`` is a sum with the attention's output among its operands (a field of refs, not a method)."""
    operands = getattr(check, "operands", ())
    return isinstance(operands, tuple) and any(str(ref) == template for ref in operands)


def with_values_added(pages: Sequence[Any], results: Mapping[int, list[CheckResult]], source: TensorDict,
                      term: str = "values") -> TensorDict | None:
    """``source`` with every layer's attention output plus its values, heads merged; None where no captured sum of
    the attention's output failed or was unrecognised, or the run shows no such pair of tensors of fitting shapes."""
    refs = _attention_refs(pages, "q" if term == "queries" else "v_heads")
    if refs is None:
        return None
    out_template, v_template = refs
    if not any(result.status in (FAILED, UNRECOGNISED) for page in pages if page.captured
               and any(_reads(check, out_template) for check in page.snap.checks)
               for result in results.get(page.snap.number, ())):
        return None
    tensors, added = dict(source.tensors), False
    for name, out in source.tensors.items():
        match = _pattern(out_template).match(name)
        values = tensors.get(v_template.format(**match.groupdict())) if match else None
        if values is None or values.dim() != 4 or out.dim() != 3 or values.shape[0] != out.shape[0] \
                or values.shape[2] != out.shape[1] or values.shape[1] * values.shape[3] != out.shape[2]:
            continue
        added_term = values.reshape(out.shape) if term == "unmoved" else merged_values(values)
        tensors[name] = out + added_term.to(out.dtype)
        added = True
    return source.with_tensors(tensors) if added else None


def values_added_taken(pages: Sequence[Any], results: Mapping[int, list[CheckResult]],
                       again: Mapping[int, list[CheckResult]]) -> dict[int, list[CheckResult]]:
    """``results``, with each captured step that failed or was unrecognised and whose checks that ran all pass ``again``
    (the run judged with the values added: a correct form that fits exactly, where the failure's bug form was read
    without it) taking those, said so."""
    taken = dict(results)
    for page in pages:
        number = page.snap.number
        before, after = results.get(number, []), again.get(number, [])
        ran = [result for result in after if result.checkable]
        if page.captured and any(r.status in (FAILED, UNRECOGNISED) for r in before) and ran and \
                all(result.status == PASSED for result in ran):
            taken[number] = [replace(result, detail=f"{result.detail} ({ADDED})") if result.checkable else result
                             for result in after]
    return taken


def merged_values(values: torch.Tensor) -> torch.Tensor:
    """Per-head values (B, h, N, hs) with their heads merged, (B, N, h·hs)."""
    return values.transpose(1, 2).reshape(values.shape[0], values.shape[2], -1)


# the skip terms a bug puts in V's place: (the term, the bug form's name, what it says)
WRONG_TERMS = (("unmoved", "skip term's heads merged without moving their axis",
                "V (B, h, N, hs) reshaped to (B, N, C) as it lies, tokens and heads mixed"),
               ("queries", "skip term from the queries", "Q with its heads merged, not V"))


def wrong_skip_named(pages: Sequence[Any], results: Mapping[int, list[CheckResult]], source: TensorDict,
                     judged: Callable[[TensorDict], Mapping[int, list[CheckResult]]]) -> dict[int, list[CheckResult]]:
    """``results``, with each captured sum of the attention's output still failed or unrecognised that every check
    passes once the attention's output is read with a wrong skip term added (``WRONG_TERMS``) failing with that bug
    form: the form fits exactly where no correct one did (``judged``: the run judged on a source)."""
    named = dict(results)
    for term, name, says in WRONG_TERMS:
        skipped = with_values_added(pages, named, source, term)
        if skipped is None:
            continue
        again = judged(skipped)
        for page in pages:
            number = page.snap.number
            ran = [result for result in again.get(number, []) if result.checkable]
            if page.captured and any(r.status in (FAILED, UNRECOGNISED) for r in named.get(number, [])) and ran \
                    and all(result.status == PASSED for result in ran):
                message = (f"your {page.label} is its operands with the attention's output plus {says}: the "
                           "attention's skip adds the wrong term")
                named[number] = [CheckResult(name="the attention's output plus its values (a T2T skip)",
                                             passed=False, status=FAILED, detail=message,
                                             evidence=Evidence(BUG_FORM, name, message))]
    return named
