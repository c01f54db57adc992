"""How a traced line's module calls reach a check (issue 39 point 3): each check declares what a trace can do for it
in one capability object (``Check.TRACE``, a ``TraceUse``), not in flags of the generic ``Check``, and picks its own
form of binding (``Check.bound_by``) instead of the trace telling checks apart by their classes."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from transformer_trace.checks import CHECKS, Check, HeadsRejoin, LinearOf, RowEquals, SumOf, TraceUse
from transformer_trace.checks.post_norm import ResidualSumEitherNorm
from transformer_trace.reports import REPORTS
from transformer_trace.sources import ModuleRef, Ref

GENERATOR = Path(__file__).resolve().parent.parent / "generator"
FORMER_FLAGS = ("FROM_CALLS", "CALLS_BOUND", "READS_LOCALS", "MODEL_IMAGE")


def every_check_class() -> list[type[Check]]:
    declared = {type(check) for report in REPORTS.values() for snap in report.snapshots for check in snap.checks}
    return sorted(declared | set(CHECKS.values()), key=lambda cls: cls.__qualname__)


@pytest.mark.parametrize("cls", every_check_class(), ids=lambda cls: cls.__qualname__)
def test_a_check_declares_what_a_trace_reads_of_it_in_one_capability_and_no_flag(cls):
    assert isinstance(cls.TRACE, TraceUse)
    assert not [name for klass in cls.__mro__ for name in FORMER_FLAGS if name in vars(klass)]


class Recorder:
    """A binder that says which form of binding a check picked."""

    def declared(self, check):
        return "declared"

    def projections(self, check):
        return "projections"

    def operand(self, check):
        return "operand"

    def row(self, check):
        return "row"


@pytest.mark.parametrize("check, form", [
    (HeadsRejoin(heads=(Ref("q_heads"),), full=(Ref("q"),)), "projections"),
    (SumOf(out=Ref("res"), operands=(Ref("x"), Ref("y"))), "operand"),
    (ResidualSumEitherNorm(out=Ref("res"), operands=(Ref("x"), Ref("y"))), "operand"),  # a residual sum too
    (RowEquals(out=Ref("cls"), source=Ref("seq"), row=0, claim="the class token"), "row"),
    (LinearOf(out=Ref("q"), x=Ref("x"), module=ModuleRef("w_q")), "declared"),
])
def test_each_check_picks_its_own_form_of_binding_a_lines_module_calls(check, form):
    assert check.bound_by(Recorder()) == form


def test_the_trace_binds_calls_without_telling_checks_apart_by_class_or_importing_their_private_names():
    source = (GENERATOR / "trace" / "reading" / "weights.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    ladders = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
               and getattr(node.func, "id", "") == "isinstance" and isinstance(node.args[1], (ast.Name, ast.Tuple))
               and any(name in CHECKS.values() or name in (HeadsRejoin, SumOf, RowEquals)
                       for name in _named(node.args[1]))]
    private = [alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               and (node.module or "").startswith("transformer_trace.checks")
               for alias in node.names if alias.name.startswith("_")]
    assert ladders == [] and private == []


def _named(node: ast.expr) -> list[type]:
    import transformer_trace.checks as checks
    import transformer_trace.checks.calls as calls

    names = [n.id for n in ([node] if isinstance(node, ast.Name) else node.elts) if isinstance(n, ast.Name)]
    return [found for name in names for module in (checks, calls)
            if inspect.isclass(found := getattr(module, name, None))]
