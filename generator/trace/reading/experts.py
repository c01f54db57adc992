"""A mixture of experts in the MLP's place (DeepSeek-V3's MoE, Mixtral's sparse block): a router picks, per token, some
of several expert MLPs, their outputs weighted by the router's scores and summed, often with a shared expert every
token goes through added. No MLP form the checks know is that computation, so the step holding its output is
unrecognised, and is said to be one by its own name, where the marked lines' module calls show it: a module of the
user's whose output is the step's tensor, that called two or more modules of one class each on a part of the tokens
it was given (the routed experts: each row of their input one of its input's rows, fewer than all). What it was given
is checked all the same (sublayer_input.py: the experts fed the un-normalised stream are named there). Where the
call's router and experts tell the routing whole, the step is judged as their weighted sum (expert_weights.py)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from transformer_trace.checks import NOT_CHECKABLE, CheckResult
from transformer_trace.checks.base import FAILED, UNRECOGNISED
from transformer_trace.checks.evidence import BUG_FORM, Evidence
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.expert_weights import CLAIM, judged, read_routing

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.trace.reading.pages import SnapshotReading

MIXTURE = ("a mixture of experts: routed experts' weighted sum plus shared experts — not checked as one MLP")


def _callees(calls: Sequence[ModuleCall], index: int) -> list[ModuleCall]:
    """The calls the call at ``index`` made itself (calls are listed as they return: its callees just before it)."""
    caller, found = calls[index], []
    for call in reversed(calls[:index]):
        if call.depth <= caller.depth:
            break
        if call.depth == caller.depth + 1:
            found.append(call)
    return found[::-1]


def _rows_of(part: torch.Tensor, whole: torch.Tensor) -> bool:
    """Whether ``part`` (k, C) holds fewer rows than ``whole`` (…, C), each one of them."""
    rows = whole.reshape(-1, whole.shape[-1])
    if part.dim() != 2 or part.shape[-1] != rows.shape[-1] or not 0 < part.shape[0] < rows.shape[0]:
        return False
    return bool((part[:, None, :] == rows[None, :, :]).all(-1).any(-1).all())


def _routed(calls: Sequence[ModuleCall], index: int) -> tuple[str, int, int] | None:
    """Where the call at ``index`` ran routed experts (the module docstring): their class, how many ran, and how many
    tokens it was given; else None."""
    given = calls[index].inputs[0] if calls[index].inputs else None
    if given is None or not given.is_floating_point():
        return None
    experts = [c for c in _callees(calls, index) if c.kind == ModuleKind.USER and c.inputs
               and c.inputs[0] is not None and _rows_of(c.inputs[0], given)]
    if not experts:
        return None
    cls, ran = Counter(c.module for c in experts).most_common(1)[0]
    return (cls, ran, given.reshape(-1, given.shape[-1]).shape[0]) if ran >= 2 else None


def _holds(output: torch.Tensor | None, step: torch.Tensor) -> bool:
    return (output is not None and output.numel() == step.numel() and output.is_floating_point()
            and bool(torch.equal(output.reshape(step.shape).to(step.dtype), step)))


def mixture_of_experts(readings: Sequence[SnapshotReading],
                       results: dict[int, list[CheckResult]]) -> dict[int, list[CheckResult]]:
    """``results`` with each captured step that holds a mixture of experts' output (the module docstring) and that no
    check judged (not checkable, or unrecognised) judged from the call's router and experts (expert_weights.py):
    passed, or failed with the bug form that fitted; where neither, said to be one: unrecognised, by that name. The
    others as they were."""
    pages = [page for page in readings if page.captured]
    found = dict(results)
    for page in pages:
        for index, call in enumerate(page.calls):
            routed = _routed(page.calls, index) if call.kind == ModuleKind.USER else None
            output = page.run.as_called(call.outputs[0]) if routed and call.outputs else None
            for step in (p for p in pages if output is not None and _holds(output, p.main_as_called)):
                cls, ran, tokens = routed  # type: ignore[misc]  # set where output is
                why = (f"{MIXTURE} (the {call.module} {page.label}'s line called, whose output is your "
                       f"{step.main.variable or step.label}, ran {ran} {cls} modules, each on a part of the {tokens} "
                       f"tokens it was given)")
                given = call.inputs[0]
                routing = read_routing(given, _callees(page.calls, index), cls) if given is not None else None
                verdict = judged(step.main_as_called, routing) if routing is not None else None
                earlier = found.get(step.snap.number, [])
                if verdict is None:
                    found[step.snap.number] = [_named(result, why) for result in earlier]
                    continue
                judged_here = [r for r in earlier if r.status not in (NOT_CHECKABLE, UNRECOGNISED)]
                evidence = None if verdict.passed else Evidence(BUG_FORM, verdict.form, verdict.message)
                found[step.snap.number] = [*judged_here, CheckResult(
                    name=CLAIM, passed=verdict.passed, detail=verdict.message,
                    status="" if verdict.passed else FAILED, evidence=evidence)]
    return found


def _named(result: CheckResult, why: str) -> CheckResult:
    if result.status not in (NOT_CHECKABLE, UNRECOGNISED):
        return result
    return dataclasses.replace(result, status=UNRECOGNISED, passed=False, lacks=(), missing=(), parts=(),
                               detail=f"unrecognised: {why}; {result.detail}")
