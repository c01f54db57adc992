"""Metamorphic tests of `trace` (issue 40 point 6): small base scripts (a ViT and an encoder–decoder made from the
examples, tests/variants/shrunk.py; a GPT, tests/variants/bases/gpt.py) rewritten by named source transformations
(tests/variants/*_rewrites.py). A correct rewrite computes what the base computes, written another way (einsum, a
−1e9 mask, sequence-first tensors, post-norm, a Linear-like class of one's own, half precision, dropout in train
mode, a notebook ...): `trace` gives it no red verdict. A bug rewrite plants one bug: `trace` names it as the first
failure, at its snapshot, with its form. Each rewrite's texts must match exactly once, so a rewrite that stops
matching its base fails here instead of testing the base again. tests/variants/README.md has the counts
(tests/variants/measure.py prints them)."""

from __future__ import annotations

import json
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from tests.variants.judge import Judged, judge
from tests.variants.rewrites import Bug, Rewrite, as_notebook, top_level_chunks
from tests.variants.variants import BY_BASE, bug_variants, correct_variants
from transformer_trace.checks import FAILED, NOT_CHECKABLE, PASSED, UNRECOGNISED
from transformer_trace.cli import main

CHECKS = Path(__file__).resolve().parent.parent / "generator" / "checks"
CORRECT, BUGS = correct_variants(), bug_variants()

# variant id -> why `trace` still gives this correct variant a red verdict (a strict xfail: fixing it fails here)
KNOWN_FALSE_RED = {
}
# variant id -> why `trace` does not name this bug first with its form yet (each a false green: exit 0 on it)
KNOWN_MISSED: dict[str, str] = {
}


def params(variants, known):
    return [pytest.param(v, id=v.id, marks=[pytest.mark.xfail(strict=True, reason=known[v.id])] if v.id in known
                         else []) for v in variants]


def test_every_rewrite_applies_each_of_its_texts_exactly_once():
    for variant in CORRECT + BUGS:
        variant.source()  # asserts: each old text found once
    rewrite = Rewrite("demo", "", (("a", "b"),))
    assert rewrite.apply("xa") == "xb"
    for source in ("x", "aa"):  # gone, or ambiguous: the rewrite no longer says what it changes
        with pytest.raises(AssertionError, match="'demo'"):
            rewrite.apply(source)


def test_the_variants_cover_every_rewrite_and_name_each_bug_by_a_form_the_checks_declare():
    declared = " ".join(path.read_text(encoding="utf-8") for path in CHECKS.glob("*.py"))
    bugs = [v.bug for v in BUGS]
    assert all(bug is not None and bug.first and f'"{bug.form}"' in declared for bug in bugs), bugs
    assert all(v.bug is None for v in CORRECT)
    traced_alone = {(v.base, v.rewrites[0].name) for v in CORRECT + BUGS if len(v.rewrites) == 1}
    for base, module in BY_BASE.items():
        assert {(base, r.name) for r in module.CORRECT + module.BUGS} <= traced_alone, base
    assert len(CORRECT) >= 40 and len(BUGS) >= 20
    assert set(KNOWN_FALSE_RED) <= {v.id for v in CORRECT} and set(KNOWN_MISSED) <= {v.id for v in BUGS}


def test_a_notebook_variant_has_a_cell_per_top_level_definition():
    source = "import torch\n\n\ndef f(x):\n    return x\n\n\ny = f(1)  # BREAKPOINT G01\nz = (\n\n    y)\n"
    assert top_level_chunks(source) == ["import torch", "def f(x):\n    return x",
                                        "y = f(1)  # BREAKPOINT G01\nz = (\n\n    y)"]
    cells = as_notebook(source, "t")["cells"]
    assert [c["cell_type"] for c in cells] == ["markdown", "code", "code", "code"]


@pytest.fixture(scope="module")
def traced(request, tmp_path_factory) -> dict[str, Judged]:
    """Every variant this run selected, traced two at a time: each trace runs the script in an interpreter of its own,
    most of whose time is PyTorch's import, so two worker processes (each judging whole variants: no state shared)
    halve the time on two cores."""
    selected = [item.callspec.params["variant"] for item in request.session.items if item.module is request.module
                and "variant" in getattr(getattr(item, "callspec", None), "params", {})]
    folder = tmp_path_factory.mktemp("variants")
    paths = [variant.write(folder / str(index)) for index, variant in enumerate(selected)]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        return dict(zip((variant.id for variant in selected), pool.map(judge, paths)))


@pytest.mark.slow
@pytest.mark.parametrize("variant", params(CORRECT, KNOWN_FALSE_RED))
def test_a_correct_variant_gets_no_red_verdict(traced, variant):
    judged = traced[variant.id]
    assert judged.error is None
    assert judged.with_status(FAILED) == [], judged.with_status(FAILED)
    assert judged.with_status(PASSED), "the checks really ran"


@pytest.mark.slow
@pytest.mark.parametrize("variant", params(BUGS, KNOWN_MISSED))
def test_a_bug_variant_is_named_first_with_its_form(traced, variant):
    judged, bug = traced[variant.id], variant.bug
    assert isinstance(bug, Bug) and judged.error is None
    first = judged.first_failure
    assert first is not None and (first.label, first.form) == (bug.first, bug.form), first


@pytest.mark.slow
def test_the_judge_gives_the_verdicts_trace_writes(tmp_path):
    """The tests above judge a variant without writing its pages; `trace` itself gives the same verdicts, the same
    first failure and exit 1 (a bug variant, whose other snapshots pass or are not checkable)."""
    variant = next(v for v in BUGS if v.id == "gpt: own class Conv1D + q and k swapped in the split")
    script = variant.write(tmp_path / "script")
    assert main(["trace", str(script), "--out", str(tmp_path / "out"), "--name", "t", "-q"]) == 1
    data = json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))
    written = {}
    for snap in data["snapshots"]:
        if snap["captured"]:
            check = snap["check"]
            written[snap["label"]] = (UNRECOGNISED if check.get("status") == UNRECOGNISED else
                                      {True: PASSED, False: FAILED, None: NOT_CHECKABLE}[check["passed"]])
    judged = judge(script)
    assert written == {v.label: v.status for v in judged.verdicts}
    assert data["outcome"]["first_failure"].split(" ")[0] == judged.first_failure.label
