"""A red verdict needs evidence (issue 40): a check's failure names the property broken or the bug form that fitted,
first, with its numbers; a failure without either is unrecognised (its own outcome, not red, exit 0), with the forms
tried; the outcome reaches snapshots.json's verdict, the exit status, JUnit and the class page's counts."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import torch

from transformer_trace.checks import (
    CausalMask, CheckResult, ContextConcat, ContextHeads, LayerNormOf, RowEquals, SameTensor, ScaledScores, SoftmaxRows,
    SumOf,
)
from transformer_trace.checks.base import needs_evidence
from transformer_trace.checks.evidence import BUG_FORM, PROPERTY
from transformer_trace.sources import ModuleRef, Ref, TensorDict
from transformer_trace.trace.junit import Whose, junit_tree
from transformer_trace.trace.verdicts import EXIT_FAILED, EXIT_PASSED, UNRECOGNISED, exit_status, verdict

torch.manual_seed(0)
B, H, T, HS = 2, 2, 5, 4
Q, K, V = (torch.randn(B, H, T, HS, dtype=torch.float64) for _ in range(3))
X = torch.randn(B, T, H * HS, dtype=torch.float64)
SUB = torch.randn(B, T, H * HS, dtype=torch.float64)


def scores_check() -> ScaledScores:
    return ScaledScores(out=Ref("scores"), q=Ref("q"), k=Ref("k"))


@pytest.mark.parametrize("scores, named, said", [
    (Q @ K.transpose(-2, -1), "1/√d missing", "without the 1/√4"),
    (Q @ K.transpose(-2, -1) / 8, "another scaling than 1/√hs", "Q·Kᵀ × 0.125"),
])
def test_a_named_bug_form_that_fits_is_the_failures_evidence_and_leads_its_message(scores, named, said):
    result = scores_check().run(TensorDict({"scores": scores, "q": Q, "k": K}))
    assert result.status == "failed" and result.evidence.kind == BUG_FORM and result.evidence.name == named
    assert result.detail.startswith(result.evidence.message) and said in result.evidence.message
    assert needs_evidence(result) is result  # evidenced: stays red


def test_a_failure_that_fits_no_form_is_unrecognised_with_the_forms_tried():
    result = scores_check().run(TensorDict({"scores": torch.randn(B, H, T, T, dtype=torch.float64), "q": Q, "k": K}))
    assert result.status == "failed" and result.evidence is None
    assert any(tried.startswith("1/√d missing: ") and "largest difference" in tried for tried in result.tried)
    judged = needs_evidence(result)
    assert judged.status == UNRECOGNISED and not judged.passed and judged.checkable
    assert judged.detail.startswith("unrecognised:") and "recomputed Q·Kᵀ/√4" in judged.detail
    assert "bug forms tried: 1/√d missing" in judged.detail
    assert judged.json()["passed"] is None and judged.json()["status"] == UNRECOGNISED


def test_broken_properties_are_evidence_whatever_the_form():
    weights = torch.softmax(torch.randn(B, H, T, T, dtype=torch.float64), -1)
    leaky = SoftmaxRows(out=Ref("w"), scores=Ref("s"), causal=True).run(
        TensorDict({"w": weights, "s": torch.randn(B, H, T, T, dtype=torch.float64)}))
    assert leaky.evidence.kind == PROPERTY and leaky.evidence.message.startswith("a position sees the next")
    halved = SoftmaxRows(out=Ref("w"), scores=Ref("s")).run(TensorDict({"w": weights / 2, "s": weights}))
    assert halved.evidence.name == "probability rows sum to 1" and "sums to 0.5" in halved.evidence.message
    mask = torch.zeros(T, T)
    assert CausalMask(out=Ref("m")).run(TensorDict({"m": mask})).evidence.message.startswith(
        "a position sees the next")


def test_nan_where_the_inputs_have_none_is_evidence():
    sums = X + SUB
    sums[0, 0, 0] = float("nan")
    result = SumOf(out=Ref("y"), operands=(Ref("x"), Ref("sub"))).run(TensorDict({"y": sums, "x": X, "sub": SUB}))
    assert result.evidence.name == "no NaN where the inputs have none" and "1 NaN values" in result.evidence.message


def test_a_step_computed_from_another_tensor_or_with_an_operand_left_out_is_named():
    tensors = {"x": X, "sub": SUB, "ln": torch.nn.functional.layer_norm(SUB, (H * HS,))}
    wrong = LayerNormOf(out=Ref("ln"), x=Ref("x"), module=ModuleRef("norm")).run(TensorDict(tensors))
    assert wrong.evidence.name == "computed from another tensor"
    assert "from sub where x belongs" in wrong.evidence.message
    dropped = SumOf(out=Ref("y"), operands=(Ref("x"), Ref("sub"))).run(TensorDict({"y": SUB.clone(), "x": X,
                                                                                    "sub": SUB}))
    assert dropped.evidence.name == "residual dropped" and "leaves out x" in dropped.evidence.message
    twice = SumOf(out=Ref("y"), operands=(Ref("x"), Ref("pos"))).run(TensorDict({"y": X + 2 * SUB, "x": X,
                                                                                   "pos": SUB}))
    assert twice.evidence.name == "added twice" and "pos was added twice" in twice.evidence.message


def test_heads_merged_in_place_and_the_wrong_token_are_named():
    probs = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(HS), -1)
    merged = (probs @ V).reshape(B, T, H * HS)  # the transpose back left out
    result = ContextConcat(out=Ref("c"), probs=Ref("p"), v=Ref("v")).run(TensorDict({"c": merged, "p": probs,
                                                                                    "v": V}))
    assert result.evidence.name == "heads merged without moving the axis back"
    pooled = RowEquals(out=Ref("o"), source=Ref("x"), row=0, claim="row 0").run(TensorDict({"o": X[:, 3], "x": X}))
    assert pooled.evidence.name == "the wrong token pooled" and "row 3" in pooled.evidence.message


def test_a_snapshot_with_a_failure_and_an_unrecognised_check_is_failed_else_unrecognised():
    failed = CheckResult("a", False, "x")
    unrecognised = CheckResult("b", False, "unrecognised: y", status=UNRECOGNISED)
    passed = CheckResult("c", True, "z")
    assert CheckResult.combined([failed, unrecognised, passed], judge_checkable=True).status == "failed"
    assert CheckResult.combined([unrecognised, passed], judge_checkable=True).status == UNRECOGNISED


def snapshot(label: str, check: dict, **extra) -> dict:
    return {"label": label, "title": f"step {label}", "captured": True, "check": check, "stage": "s",
            "source": {"path": "model.py", "line": 12}, **extra}


DATA = {"model": "t", "title": "Trace", "snapshots": [
    snapshot("S01", {"name": "ok", "passed": True, "detail": ""}),
    snapshot("S02", {"name": "equals Q·Kᵀ / √hs", "passed": None, "status": UNRECOGNISED,
                     "detail": "unrecognised: your step matches none of the forms"}),
    snapshot("S03", {"name": "n", "passed": None, "detail": "needs S02"}),
], "outcome": {}}
ALICE = Whose("alice", Path("/course/alice/model.py"), Path("/course"))  # the JUnit file's student and paths


def test_unrecognised_alone_exits_0_and_is_skipped_in_junit_with_its_word():
    assert [verdict(s) for s in DATA["snapshots"]] == ["passed", UNRECOGNISED, "not checkable"]
    assert exit_status(DATA) == EXIT_PASSED
    root = junit_tree(DATA, ALICE).getroot()
    skipped = [case.find("skipped").get("message") for case in root.iter("testcase")
               if case.find("skipped") is not None]
    suite = root.find("testsuite")
    assert skipped[0].startswith("unrecognised: equals Q·Kᵀ / √hs") and suite.get("skipped") == "2"
    assert root.get("failures") == "0"
    assert suite.find("properties/property[@name='unrecognised']").get("value") == "1"


def test_a_failure_with_evidence_exits_1_and_its_junit_message_leads_with_the_diagnosis_and_the_marked_line():
    failing = snapshot("S04", {"name": "equals Q·Kᵀ / √hs", "passed": False, "detail": "…",
                               "evidence": {"kind": BUG_FORM, "name": "1/√d missing",
                                            "message": "your scores equal Q·Kᵀ without the 1/√4 scaling"}})
    data = {**DATA, "snapshots": [*DATA["snapshots"], failing], "outcome": {"first_failure": "S04 step S04: x"}}
    assert exit_status(data) == EXIT_FAILED
    failure = next(case.find("failure") for case in junit_tree(data, ALICE).getroot().iter("testcase")
                   if case.find("failure") is not None)
    message = failure.get("message")  # what is wrong and where first: the marked line from the repository's root
    assert message.startswith("first failure (pipeline order): S04 at alice/model.py:12: "
                              "your scores equal Q·Kᵀ without the 1/√4 scaling")
    ET.fromstring(ET.tostring(failure))


def test_a_softmax_of_the_scores_scaled_again_is_named_with_its_factor():
    scores = Q @ K.transpose(-2, -1) / math.sqrt(HS)
    weights = torch.softmax(scores / math.sqrt(2), -1)  # 1/√C where the scores already hold 1/√hs
    result = SoftmaxRows(out=Ref("w"), scores=Ref("s")).run(TensorDict({"w": weights, "s": scores}))
    assert result.evidence.name == "another scaling inside the softmax" and "× 0.7071" in result.evidence.message


def test_per_head_context_read_from_heads_merged_in_place_is_named():
    probs = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(HS), -1)
    read = (probs @ V).reshape(B, T, H * HS).reshape(B, T, H, HS).transpose(1, 2)
    result = ContextHeads(out=Ref("c"), probs=Ref("p"), v_heads=Ref("v")).run(TensorDict({"c": read, "p": probs,
                                                                                         "v": V}))
    assert result.evidence.name == "heads merged without moving the axis back"


def test_a_layer_norm_of_its_input_plus_another_tensor_is_named():
    memory = torch.randn(B, T + 3, H * HS, dtype=torch.float64)
    out = torch.nn.functional.layer_norm(X + memory[:, :T], (H * HS,))
    check = SameTensor(out=Ref("y"), source=Ref("x"), claim="the decoder's output, normalised", or_layer_norm=True)
    result = check.run(TensorDict({"y": out, "x": X, "memory": memory}))
    assert result.evidence.name == "another tensor added"
    assert "x + memory (its first (2, 5, 8))" in result.evidence.message


# --- the forms of the evidence rule's regressions (tests/test_trace.py and test_trace_weights.py trace them whole) ---


def test_a_later_layer_fed_an_earlier_layers_tensor_is_named_and_a_later_steps_equal_tensor_never_stands_in():
    embeddings, first_out = torch.randn(B, T, 8, dtype=torch.float64), torch.randn(B, T, 8, dtype=torch.float64)
    fed_again = SameTensor(out=Ref("blocks.1.input"), source=Ref("blocks.0.output"), claim="is what was handed over")
    result = fed_again.run(TensorDict({"blocks.0.input": embeddings, "blocks.0.output": first_out,
                                       "blocks.1.input": embeddings.clone()}))
    assert result.status == "failed" and result.evidence.name == "computed from another tensor"
    assert "from blocks.0.input at an earlier layer (layer 0 of blocks)" in result.evidence.message
    # a block output that is not its last residual sum, whose value a LATER step holds (the next block's input is this
    # block's output on correct code too): that equality is no evidence, so the step is unrecognised, not red
    later = SameTensor(out=Ref("blocks.1.output"), source=Ref("blocks.1.residual_2"), claim="is the last sum")
    doubled = 2 * X
    judged = needs_evidence(later.run(TensorDict({"blocks.1.residual_2": X, "blocks.1.output": doubled,
                                                  "blocks.2.input": doubled.clone()})))
    assert judged.status == UNRECOGNISED


class _OwnLayerNorm(torch.nn.Module):
    """A traced script's own LayerNorm class, as trace/reading/weights.py rebuilds it (own_code, its gain and bias)."""

    own_code, called, normalized_shape, eps = True, "encoder.norm", (8,), 1e-5

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.rand(8, dtype=torch.float64) + 0.5)
        self.bias = torch.nn.Parameter(torch.randn(8, dtype=torch.float64))


def test_a_layer_norm_of_ones_own_with_its_gain_and_bias_swapped_is_named_with_its_own_weights():

    ln = _OwnLayerNorm()
    swapped = torch.nn.functional.layer_norm(X, (8,), ln.bias.detach(), ln.weight.detach(), 1e-5)
    source = TensorDict({"x": X, "out": swapped}, modules={"norm": ln})
    result = LayerNormOf(out=Ref("out"), x=Ref("x"), module=ModuleRef("norm")).run(source)
    assert result.status == "failed" and result.evidence.name == "gain and bias swapped"
    assert "your encoder.norm swaps its gain and bias" in result.evidence.message
    right = torch.nn.functional.layer_norm(X, (8,), ln.weight.detach(), ln.bias.detach(), 1e-5)
    assert LayerNormOf(out=Ref("out"), x=Ref("x"), module=ModuleRef("norm")).run(
        TensorDict({"x": X, "out": right}, modules={"norm": ln})).status == "passed"


IMAGE = torch.randn(2, 3, 8, 8, dtype=torch.float64)


@pytest.mark.parametrize("fed, said", [
    (IMAGE.transpose(-1, -2), "with its height and width swapped"),
    (IMAGE.flip(-2), "upside down"),
    (IMAGE.flip(-3), "colour channels in reverse order"),
])
def test_a_patch_embedding_fed_another_view_of_the_marked_image_is_named(fed, said):
    from transformer_trace.checks.calls import ConsumedImage

    result = ConsumedImage(out=Ref("img"), fed=Ref("fed")).run(TensorDict({"img": IMAGE, "fed": fed}))
    assert result.status == "failed" and result.evidence.name == "the image fed in another view"
    assert said in result.evidence.message and result.detail.startswith(result.evidence.message)


def test_patch_rows_read_in_another_pixel_order_are_named_and_right_rows_pass():
    from transformer_trace.checks.calls import PatchChain

    p, (b, c, h, w) = 4, IMAGE.shape
    right = IMAGE.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 3, 5, 1).reshape(b, 4, p * p * c)
    strided = IMAGE.reshape(b, c, p, h // p, p, w // p).permute(0, 3, 5, 2, 4, 1).reshape(b, 4, p * p * c)
    linear = torch.nn.Linear(p * p * c, 8).double()
    chain = PatchChain(out=Ref("out"), x=Ref("img"), patches=Ref("rows"), layers=(ModuleRef("proj"),))
    outcomes = {}
    for name, rows in (("right", right), ("strided", strided)):
        source = TensorDict({"img": IMAGE, "rows": rows, "out": linear(rows).detach()}, modules={"proj": linear})
        outcomes[name] = chain.run(source)
    assert outcomes["right"].status == "passed"
    assert outcomes["strided"].status == "failed"
    assert outcomes["strided"].evidence.name == "patches read in another pixel order"
    assert "pixels spaced 2 apart across the whole image" in outcomes["strided"].evidence.message
