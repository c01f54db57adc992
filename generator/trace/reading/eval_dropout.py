"""A dropout on the attention weights read back from the context (checks/attention_dropout.py), judged by the mode the
run was in, which the child records per hit (the ``training`` flag of the nn.Module whose method ran the marked line):
in eval mode (``model.eval()``, every such module's flag False) an active dropout is a bug — the weights dropped at
random where the model should be deterministic (an SDPA call given ``dropout_p=self.attn_dropout.p`` whatever the
mode) — named "attention dropout active in eval mode" with p and the weights it zeroed; in training mode it is a
correct form (issue 40, point 5: never red for the randomness), passed as probs·V through an active dropout; where no
mode was recorded (no marked line ran in a module's method), not checkable. A bug form named under the dropout's pattern
(the mask left out, say) stays the failure it is, saying the dropout was active in eval mode where it was."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from transformer_trace.checks import NOT_CHECKABLE, PASSED, CheckResult
from transformer_trace.checks.attention_dropout import ATTENTION_DROPOUT, UNDER_DROPOUT
from transformer_trace.checks.evidence import BUG_FORM
from transformer_trace.trace.reading.capture import Hit
from transformer_trace.trace.reading.dropout import DropoutActive
from transformer_trace.trace.markers import Marker

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.trace.reading.pages import SnapshotReading

IN_EVAL_MODE = "attention dropout active in eval mode"
TRAINING_CLAIM = "is probs·V, through an active dropout on the attention weights (training mode)"


def modules_training(hits: Mapping[Marker, list[Hit]]) -> bool | None:
    """True where a module that ran a marked line was in training mode, False where every one was in eval mode, None
    where none was recorded."""
    flags = {hit.training for found in hits.values() for hit in found if hit.training is not None}
    return (True in flags) if flags else None


def attention_dropout_judged(readings: Sequence[SnapshotReading], results: dict[int, list[CheckResult]],
                             training: bool | None) -> dict[int, list[CheckResult]]:
    """Each result whose evidence is a dropout on the attention weights, judged by the run's mode (the module
    docstring), by snapshot number as ``results``."""
    return {number: [_judged(result, training) for result in found] for number, found in results.items()}


def _judged(result: CheckResult, training: bool | None) -> CheckResult:
    evidence = result.evidence
    if evidence is None or evidence.kind != BUG_FORM:
        return result
    if evidence.name == ATTENTION_DROPOUT:
        if training is False:
            message = (f"{IN_EVAL_MODE}: the run was in eval mode (every module that ran a marked line had "
                       f"training = False), yet {evidence.message.removeprefix('your ')}")
            return dataclasses.replace(result, detail=message, evidence=dataclasses.replace(
                evidence, name=IN_EVAL_MODE, message=message))
        if training:
            return dataclasses.replace(result, name=TRAINING_CLAIM, passed=True, status=PASSED, evidence=None,
                                       detail=evidence.message)
        lack = DropoutActive("the run's mode (no marked line ran in a module's method)",
                             "ran with dropout active on the attention weights; whether the run was in training mode "
                             "is not known")
        return dataclasses.replace(result, status=NOT_CHECKABLE, passed=False, lacks=(lack,), missing=(lack.missing,),
                                   evidence=None, detail=f"ran with dropout active, mode not known: {evidence.message}")
    if UNDER_DROPOUT in evidence.message and training is False:
        message = f"{evidence.message}; the attention dropout was active in eval mode too"
        return dataclasses.replace(result, detail=message, evidence=dataclasses.replace(evidence, message=message))
    return result
