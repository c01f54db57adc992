"""Checks are typed objects that run against any tensor source: a model run, or tensors captured without a model."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from transformer_trace.checks import (
    CHECKS, THIS, CausalMask, Check, CheckResult, ContextConcat, ContextHeads, HeadsRejoin, LayerNormOf, LayerNormStatistics,
    LinearHeads, LinearOf, RowEquals, SameTensor, ScaledScores, SoftmaxRows, SumOf,
)
from transformer_trace.registry import Registry
from transformer_trace.reports import REPORTS
from transformer_trace.sources import InputRef, ModuleRef, NotCheckable, ParamRef, Ref, TensorDict


def attention_tensors(masked: bool) -> dict[str, torch.Tensor]:
    """One attention layer's tensors as a student's script might capture them: no model, only tensors."""
    torch.manual_seed(0)
    B, h, T, hs = 1, 2, 5, 4
    q, k, v = (torch.randn(B, h, T, hs) for _ in range(3))
    scores = q @ k.transpose(-2, -1) / math.sqrt(hs)
    mask = torch.zeros(T, T).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")).view(1, 1, T, T)
    if masked:
        scores = scores + mask
    probs = scores.softmax(-1)
    context = probs @ v
    x = torch.randn(B, T, h * hs)
    out = torch.randn(B, T, h * hs)
    return {"q": q, "k": k, "v": v, "q_full": q.transpose(1, 2).reshape(B, T, h * hs), "scores": scores, "probs": probs,
            "context": context, "concat": context.transpose(1, 2).reshape(B, T, h * hs), "mask": mask, "x": x, "out": out,
            "residual": x + out, "ln": torch.nn.functional.layer_norm(x + out, (h * hs,))}


WEIGHT_FREE = [
    SoftmaxRows(out=Ref("probs"), scores=Ref("scores"), causal=True),
    CausalMask(out=Ref("mask")),
    ScaledScores(out=Ref("scores"), q=Ref("q"), k=Ref("k")),
    ContextHeads(out=Ref("context"), probs=Ref("probs"), v_heads=Ref("v")),
    ContextConcat(out=Ref("concat"), probs=Ref("probs"), v=Ref("v")),
    HeadsRejoin(heads=(Ref("q"),), full=(Ref("q_full"),)),
    SumOf(out=Ref("residual"), operands=(Ref("x"), Ref("out"))),
    LayerNormStatistics(out=Ref("ln"), x=Ref("residual")),
]


@pytest.mark.parametrize("check", WEIGHT_FREE, ids=lambda c: type(c).__name__)
def test_a_weight_free_check_runs_on_captured_tensors_alone(check):
    masked = not isinstance(check, ScaledScores)  # scores = Q·Kᵀ/√hs holds before the mask is added
    tensors = attention_tensors(masked=masked)
    result = check.run(TensorDict(tensors))
    assert result.status == "passed", result.detail
    first = check.inputs()[0].template
    broken = dict(tensors, **{first: tensors[first].clone().index_put_((torch.tensor([0]),), torch.tensor(0.5), accumulate=True)})
    assert check.run(TensorDict(broken)).status == "failed"


def test_a_check_that_needs_weights_is_not_checkable_without_a_model_and_says_what_is_missing():
    check = LinearOf(out=Ref("out"), x=Ref("x"), module=ModuleRef("{block}.attn.proj"))
    result = check.run(TensorDict(attention_tensors(masked=True), places={"block": "blocks.0"}))
    assert result.status == "not checkable" and not result.passed and not result.checkable
    assert result.missing == ("module blocks.0.attn.proj",) and "without the model's weights" in result.detail


def test_a_missing_tensor_makes_a_check_not_checkable_naming_it():
    result = SoftmaxRows(out=Ref("{layer}.probs"), scores=Ref("{layer}.scores")).run(TensorDict({}, places={"layer": "blocks.3.attn"}))
    assert result.status == "not checkable" and result.missing == ("blocks.3.attn.probs", "blocks.3.attn.scores")


def test_inputs_are_read_from_the_field_types():
    check = LinearHeads(out=Ref("q"), x=Ref("ln_1"), module=ModuleRef("attn.qkv"), part=0)
    assert check.inputs() == (Ref("q"), Ref("ln_1"))
    assert LinearHeads.parameters() == {"out": "tensor", "x": "tensor", "module": "module", "part": "value"}
    assert SumOf.parameters()["operands"] == "tensors"
    with pytest.raises(TypeError, match="takes a Ref"):
        LinearHeads(out="q", x=Ref("ln_1"), module=ModuleRef("attn.qkv"), part=0)


def test_this_is_bound_to_the_snapshot_tensor():
    from transformer_trace.catalogue import Snapshot

    snap = Snapshot(number=1, title="t", variable="v", stage="s", tensors=(Ref("{block}.attn.probs"),),
                    checks=(SoftmaxRows(scores=Ref("{block}.attn.scores")), CausalMask(out=Ref("mask"))))
    assert SoftmaxRows(scores=Ref("s")).out is THIS
    assert snap.checks[0].out == Ref("{block}.attn.probs") and snap.checks[1].out == Ref("mask")


def test_several_checks_combine_into_one_result():
    passed, failed = CheckResult("a", True, "fine"), CheckResult("b", False, "broken")
    unknown = CheckResult("c", False, "not checkable: x", status="not checkable", missing=("x",))
    assert CheckResult.combined([passed]) is passed
    assert CheckResult.combined([passed, failed]).status == "failed"
    assert CheckResult.combined([passed, unknown]).status == "not checkable"
    assert CheckResult.combined([passed, passed]).passed


def test_a_second_check_under_a_taken_name_is_refused():
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class SoftmaxRows(Check):  # noqa: F811 - the generic check's name, on purpose
        out: Ref = THIS

    with pytest.raises(ValueError, match="two checks are named 'softmax_rows'"):
        CHECKS.merged(Registry("check", [(SoftmaxRows.key(), SoftmaxRows)]))


def test_a_catalogue_check_missing_from_the_report_registry_is_refused():
    report = REPORTS["encoder-decoder"]
    with pytest.raises(ValueError, match="not in the report's check registry"):
        dataclasses.replace(report, checks=Registry("check"))


@pytest.mark.parametrize("key", REPORTS)
def test_every_check_in_a_catalogue_is_registered_and_typed(key):
    report = REPORTS[key]
    for snap in report.snapshots:
        for check in snap.checks:
            assert report.checks[check.key()] is type(check)
            assert all(isinstance(ref, Ref) and ref is not THIS for ref in check.inputs()), (snap.number, check)
            for kind, typ in (("module", ModuleRef), ("parameter", ParamRef), ("input", InputRef)):
                assert all(isinstance(ref, typ) for ref in check.refs_of(kind))


def test_a_model_run_is_a_tensor_source_with_weights_and_inputs(runs):
    from transformer_trace.sources import TensorSource

    run = runs["encoder-decoder"]
    assert isinstance(run, TensorSource) and isinstance(TensorDict({}), TensorSource)
    assert run.has(Ref("{enc}.self_attn.q")) and not run.has(Ref("nothing"))
    assert run.input(InputRef("src")) == run.inputs["src"]
    with pytest.raises(NotCheckable):
        run.input(InputRef("no such input"))


def test_a_snapshot_with_several_checks_shows_each_and_lists_them_in_snapshots_json(runs, tmp_path):
    import json

    from transformer_trace.render import render_report

    report = REPORTS["encoder-decoder"]
    snap = next(s for s in report.snapshots if s.main == Ref("{enc}.self_attn.probs"))
    scores = ScaledScores(out=Ref("{enc}.self_attn.scores"), q=Ref("{enc}.self_attn.q_heads"), k=Ref("{enc}.self_attn.k_heads"))
    context = ContextHeads(out=Ref("{enc}.self_attn.context"), probs=THIS, v_heads=Ref("{enc}.self_attn.v_heads"))  # not recorded
    several = dataclasses.replace(snap, checks=(*snap.checks, scores, context))
    assert several.checks[2].probs == snap.main
    variant = dataclasses.replace(report, snapshots=tuple(several if s is snap else s for s in report.snapshots))
    pages = render_report(variant, runs["encoder-decoder"], tmp_path)
    page = next(p for p in pages if p.snap is several)
    text = (tmp_path / page.path).read_text(encoding="utf-8")
    assert text.count('!!! success "Passed: ') == 2 and "equals Q·Kᵀ / √hs" in text
    assert '!!! warning "Not checkable: context_heads"' in text and "the source has no encoder.layers.0.self_attn.context" in text
    data = json.loads((tmp_path / "snapshots.json").read_text(encoding="utf-8"))
    entry = next(s for s in data["snapshots"] if s["number"] == snap.number)
    assert [c["status"] for c in entry["checks"]] == ["passed", "passed", "not checkable"] and not entry["check"]["passed"]


def test_a_tensor_a_check_reads_by_name_but_the_source_lacks_makes_it_not_checkable():
    from transformer_trace.reports.vit.checks import RolloutRows

    result = RolloutRows(block_probs="blocks.{i}.attn.probs").run(TensorDict({}, inputs={"config": type("C", (), {"n_layers": 1}),
                                                                                         "rollout": torch.eye(3)[None]}))
    assert result.status == "not checkable" and result.missing == ("blocks.0.attn.probs",)


# ----------------------------------------------------------------------------- the claims a trace checks without weights


def layer_norm_case(positions: int = 6, C: int = 8) -> dict[str, torch.Tensor]:
    torch.manual_seed(1)
    x, sub = torch.randn(1, positions, C), torch.randn(1, positions, C)
    gain, bias = torch.rand(C) + 0.5, torch.randn(C)
    ln = torch.nn.functional.layer_norm(x + sub, (C,)) * gain + bias
    return {"x": x, "sub": sub, "ln": ln, "ln_x": torch.nn.functional.layer_norm(x, (C,)) * gain + bias}


def test_without_weights_a_layer_norm_is_checked_with_its_gain_and_bias_fitted():
    from transformer_trace.checks import LayerNormOf, ResidualLayerNorm

    tensors = layer_norm_case()
    residual = ResidualLayerNorm(out=Ref("ln"), operands=(Ref("x"), Ref("sub")), module=ModuleRef("ln_1"))
    passed = residual.run(TensorDict(tensors))
    assert passed.status == "passed" and "fitted per feature" in passed.detail
    dropped = ResidualLayerNorm(out=Ref("ln"), operands=(Ref("sub"),), module=ModuleRef("ln_1"))  # the residual left out
    assert dropped.run(TensorDict(tensors)).status == "failed"
    assert LayerNormOf(out=Ref("ln_x"), x=Ref("x"), module=ModuleRef("ln")).run(TensorDict(tensors)).status == "passed"
    assert LayerNormOf(out=Ref("ln_x"), x=Ref("sub"), module=ModuleRef("ln")).run(TensorDict(tensors)).status == "failed"
    short = layer_norm_case(positions=2)  # two positions: any gain and bias fit, so nothing is proven
    assert LayerNormOf(out=Ref("ln_x"), x=Ref("x"), module=ModuleRef("ln")).run(TensorDict(short)).status == "not checkable"


def test_scores_without_the_scaling_fail_and_say_so_and_whole_projections_are_split_into_the_scores_heads():
    tensors = attention_tensors(masked=False)
    unscaled = dict(tensors, scores=tensors["q"] @ tensors["k"].transpose(-2, -1))
    result = ScaledScores(out=Ref("scores"), q=Ref("q"), k=Ref("k")).run(TensorDict(unscaled))
    assert result.status == "failed" and "without the 1/√4" in result.detail
    whole = ScaledScores(out=Ref("scores"), q=Ref("q_full"), k=Ref("q_full"))
    assert whole.run(TensorDict(dict(tensors, scores=tensors["q"] @ tensors["q"].transpose(-2, -1) / 2))).status == "passed"
    assert whole.run(TensorDict(tensors)).status == "failed"


def test_a_softmax_over_the_wrong_axis_fails_and_is_diagnosed():
    tensors = attention_tensors(masked=False)
    wrong = dict(tensors, probs=tensors["scores"].softmax(-2))
    result = SoftmaxRows(out=Ref("probs"), scores=Ref("scores")).run(TensorDict(wrong))
    assert result.status == "failed" and "the softmax ran over the wrong axis" in result.detail


@pytest.mark.parametrize("mask", ["additive", "-1e9", "bool allowed", "bool blocked"])
def test_a_causal_mask_in_any_usual_form_is_recognised_and_one_that_shows_the_future_fails(mask):
    T = 5
    future = torch.ones(T, T, dtype=torch.bool).triu(1)
    forms = {"additive": lambda f: torch.zeros(T, T).masked_fill(f, float("-inf")), "-1e9": lambda f: torch.zeros(T, T).masked_fill(f, -1e9),
             "bool allowed": lambda f: ~f, "bool blocked": lambda f: f}
    tensors = attention_tensors(masked=True)
    good, leaky = forms[mask](future), forms[mask](torch.ones(T, T, dtype=torch.bool).triu(2))
    assert CausalMask(out=Ref("m")).run(TensorDict({"m": good})).status == "passed"
    result = CausalMask(out=Ref("m")).run(TensorDict({"m": leaky}))
    assert result.status == "failed" and "4 future entries stay visible" in result.detail
    unmasked = dict(tensors, m=good, raw=attention_tensors(masked=False)["scores"])
    softmax = SoftmaxRows(out=Ref("probs"), scores=Ref("raw"), mask=Ref("m"), causal=True)
    assert softmax.run(TensorDict(unmasked)).status == "passed"
    assert softmax.run(TensorDict(dict(unmasked, probs=unmasked["raw"].softmax(-1)))).status == "failed"  # the mask never applied


def test_an_embedding_lookup_is_checked_against_the_corner_of_the_table_a_debugger_shows():
    from transformer_trace.checks import EmbeddingLookup

    torch.manual_seed(2)
    table, ids = torch.randn(50, 16), torch.tensor([[3, 1, 40, 4]])
    tensors = {"ids": ids, "corner": table[:5, :5], "emb": table[ids], "scaled": table[ids] * 4.0}
    lookup = EmbeddingLookup(out=Ref("emb"), ids=Ref("ids"), table=Ref("corner"))
    result = lookup.run(TensorDict(tensors))
    assert result.status == "passed" and "3 of 4 positions" in result.detail
    assert lookup.run(TensorDict(dict(tensors, emb=table[ids.flip(-1)]))).status == "failed"
    scaled = EmbeddingLookup(out=Ref("scaled"), ids=Ref("ids"), table=Ref("corner"), sqrt_scaled=True)
    assert scaled.run(TensorDict(tensors)).status == "passed" and "× √16" in scaled.run(TensorDict(tensors)).detail
    assert EmbeddingLookup(out=Ref("scaled"), ids=Ref("ids"), table=Ref("corner")).run(TensorDict(tensors)).status == "failed"


@pytest.mark.parametrize("values, status", [([0, 3, 7], "passed"), ([0, -1, 7], "failed"), ([0.0, 2.5, 7.0], "failed")])
def test_without_the_runs_text_token_ids_are_checked_to_be_whole_and_not_negative(values, status):
    from transformer_trace.reports.encoder_decoder.checks import TokenIds

    check = TokenIds(ids=Ref("ids"), sentence=InputRef("src"), vocab=InputRef("src_vocab"), words=InputRef("src_words"))
    result = check.run(TensorDict({"ids": torch.tensor([values])}))
    assert result.status == status and result.name == "token IDs are whole numbers ≥ 0"
    if status == "passed":
        assert result.detail.startswith("3 IDs, from 0 to 7:")  # IDs written as the integers they are, not 0.0000


def test_without_the_weights_a_gelu_output_is_checked_to_lie_in_gelus_range():
    from transformer_trace.checks import GeluOfLinear

    check = GeluOfLinear(out=Ref("h"), x=Ref("x"), module=ModuleRef("{block}.mlp.fc1"))
    x = torch.linspace(-4, 4, 101)
    for h, status in ((torch.nn.functional.gelu(x), "passed"), (torch.nn.functional.gelu(x, approximate="tanh"), "passed"), (x, "failed")):
        result = check.run(TensorDict({"h": h, "x": x}, places={"block": "blocks.0"}))
        assert result.status == status and "without the weights of the Linear before it" in result.detail


def test_a_trace_judges_a_snapshot_by_the_checks_that_could_run():
    passed = CheckResult("a", True, "fine")
    unknown = CheckResult("b", False, "needs the weights", status="not checkable", missing=("module m",))
    strict, lenient = CheckResult.combined([passed, unknown]), CheckResult.combined([passed, unknown], judge_checkable=True)
    assert strict.status == "not checkable" and lenient.status == "passed" and lenient.missing == ("module m",)
    assert lenient.parts == (passed, unknown) and [p.json()["passed"] for p in lenient.parts] == [True, None]
    assert CheckResult.combined([CheckResult("c", False, "broken"), unknown], judge_checkable=True).status == "failed"
    assert CheckResult.combined([unknown, unknown], judge_checkable=True).status == "not checkable"


def test_a_combined_result_is_named_by_the_checks_that_decided_it():
    passed, failed = CheckResult("a", True, "fine"), CheckResult("c", False, "broken")
    unknown = CheckResult("b", False, "needs the weights", status="not checkable", missing=("module m",))
    assert CheckResult.combined([unknown, passed], judge_checkable=True).name == "a"  # "passed: b; a" would claim b ran
    assert CheckResult.combined([passed, failed, unknown]).name == "c"
    assert CheckResult.combined([passed, unknown]).name == "a; b"  # not checkable: every claim it could not decide
    assert CheckResult.combined([passed, passed]).name == "a"


# ----------------------------------------------------------------------------- forms real implementations take (tests/trace_corpus)


def padded_causal(B: int = 2, T: int = 5, pads: int = 2, rows: bool = False) -> torch.Tensor:
    """A boolean (B, 1, T, T) mask, True = allowed: causal, the last ``pads`` positions of item 1 padded (as keys, or,
    ``rows``, as queries too)."""
    allowed = torch.ones(T, T, dtype=torch.bool).tril().expand(B, 1, T, T).clone()
    allowed[1, ..., T - pads:] = False
    if rows:
        allowed[1, :, T - pads:, :] = False
    return allowed


@pytest.mark.parametrize("rows", [False, True], ids=["padded keys", "padded keys and queries"])
def test_padding_combined_with_a_causal_mask_passes_and_a_mask_that_sees_the_next_position_still_fails(rows):
    mask = padded_causal(rows=rows)
    result = CausalMask(out=Ref("mask")).run(TensorDict({"mask": mask}))
    assert result.passed and "padding combined with the causal rule" in result.detail
    leaky = mask | torch.ones(5, 5, dtype=torch.bool).triu(1).tril(1)  # each position also sees the next one
    assert CausalMask(out=Ref("mask")).run(TensorDict({"mask": leaky})).status == "failed"


def test_attention_rows_with_padded_keys_the_step_does_not_show_are_the_softmax_over_the_keys_left():
    torch.manual_seed(0)
    scores = torch.randn(2, 2, 5, 5)
    probs = scores.masked_fill(~padded_causal(T=5)[:, :, :1, :].expand(2, 1, 5, 5), float("-inf")).softmax(-1)
    result = SoftmaxRows(out=Ref("probs"), scores=Ref("scores")).run(TensorDict({"probs": probs, "scores": scores}))
    assert result.passed and "a padding mask recognised" in result.detail
    wrong_axis = scores.softmax(-2)
    assert SoftmaxRows(out=Ref("probs"), scores=Ref("scores")).run(TensorDict({"probs": wrong_axis, "scores": scores})).status == "failed"


def test_a_query_that_may_see_no_key_gets_uniform_weights_as_a_masked_fill_gives_it():
    torch.manual_seed(0)
    scores, mask = torch.randn(2, 2, 5, 5), padded_causal(rows=True)
    probs = scores.masked_fill(~mask, -10000.0).softmax(-1)  # hyunwoongko/transformer's form
    result = SoftmaxRows(out=Ref("probs"), scores=Ref("scores"), mask=Ref("mask")).run(
        TensorDict({"probs": probs, "scores": scores, "mask": mask}))
    assert result.passed, result.detail


def test_a_layer_input_that_is_a_layer_norm_of_the_previous_stage_passes_only_where_allowed():
    torch.manual_seed(0)
    before = torch.randn(2, 6, 8)
    after = torch.nn.functional.layer_norm(before, (8,)) * 1.5 + 0.1
    source = TensorDict({"in": after, "prev": before})
    assert SameTensor(out=Ref("in"), source=Ref("prev"), claim="handed over").run(source).status == "failed"
    result = SameTensor(out=Ref("in"), source=Ref("prev"), claim="handed over", or_layer_norm=True).run(source)
    assert result.passed and "a LayerNorm between the two recognised" in result.detail
    unrelated = TensorDict({"in": torch.randn(2, 6, 8), "prev": before})
    assert SameTensor(out=Ref("in"), source=Ref("prev"), claim="x", or_layer_norm=True).run(unrelated).status == "failed"


def test_a_layer_norm_with_another_epsilon_is_fitted_and_named():
    torch.manual_seed(0)
    x = 0.01 * torch.randn(2, 6, 8)  # small variance: the epsilon shows
    got = torch.nn.functional.layer_norm(x, (8,), eps=1e-6)
    result = LayerNormOf(out=Ref("out"), x=Ref("x"), module=ModuleRef("ln")).run(TensorDict({"out": got, "x": x}))
    assert result.passed and "ε = 1e-06" in result.detail


def test_a_mean_pooled_representation_passes_the_class_token_row_check_and_says_so():
    torch.manual_seed(0)
    final = torch.randn(2, 5, 8)
    check = RowEquals(out=Ref("rep"), source=Ref("final"), row=0, claim="is row 0 ([CLS])")
    result = check.run(TensorDict({"rep": final.mean(1), "final": final}))
    assert result.passed and "mean pooling" in result.name
    assert check.run(TensorDict({"rep": final[:, 1], "final": final})).status == "failed"
