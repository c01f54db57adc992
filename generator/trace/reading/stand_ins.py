"""The module-call inputs that stood in for catalogue tensors no snapshot shows (checking.py collects them as each
step's check binds its operands), and who read each tensor: the rules that compare its readers (checking.py
``_stand_ins_agree``, another_lines_input.py, kv_inputs.py, head_input.py) read them from here."""

from __future__ import annotations

import torch

from transformer_trace.checks import FAILED, CheckResult
from transformer_trace.checks.evidence import BUG_FORM, Evidence

# (the snapshot's number, the result's index among its checks, a record name, the module call's input that stood in)
StandIn = tuple[int, int, str, torch.Tensor]


def readers(stand_ins: list[StandIn]) -> dict[str, dict[int, tuple[int, torch.Tensor]]]:
    """Per catalogue tensor, each snapshot whose module calls read it: its number, the result's index and the input
    that stood in (the first stand-in of a snapshot kept)."""
    found: dict[str, dict[int, tuple[int, torch.Tensor]]] = {}
    for number, index, name, tensor in stand_ins:
        found.setdefault(name, {}).setdefault(number, (index, tensor))
    return found


def two_readers(stand_ins: list[StandIn]) -> dict[str, dict[int, tuple[int, torch.Tensor]]]:
    """``readers`` of the catalogue tensors read by exactly two snapshots' module calls."""
    return {name: found for name, found in readers(stand_ins).items() if len(found) == 2}


def reader_failed(result: CheckResult, form: str, message: str) -> CheckResult:
    """A reader's passed ``result`` failed by the bug form ``form`` the readers' comparison found (``message``), what
    its check found from what it read kept after it."""
    return CheckResult(name=result.name, passed=False, status=FAILED, detail=f"{message}; from what it read: "
                       f"{result.detail}", evidence=Evidence(BUG_FORM, form, message))
