"""`python -m transformer_trace trace`: breakpoint comments in a user's own script become a verified report."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from transformer_trace.cli import main
from transformer_trace.render import escape_text
from transformer_trace.reports import REPORTS
from transformer_trace.trace import numberings
from transformer_trace.trace.markers import find_markers
from transformer_trace.trace.reading.verify import LayoutStatus, bind_dims, layout
from transformer_trace.models.legend import Legend, Quotient
from tests.test_reports import assert_documented

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ENCODER_DECODER = EXAMPLES / "encoder_decoder_trace.py"
VIT = EXAMPLES / "vit_trace.py"


def trace(script: Path, out: Path, *extra: str) -> tuple[int, dict]:
    code = main(["trace", str(script), "--out", str(out), "--name", "t", "-q", *extra])
    data = out / "t" / "snapshots.json"
    return code, json.loads(data.read_text(encoding="utf-8")) if data.exists() else {}


def variant(tmp_path: Path, example: Path, old: str, new: str) -> Path:
    source = example.read_text(encoding="utf-8")
    assert source.count(old) == 1, old
    script = tmp_path / example.name
    script.write_text(source.replace(old, new), encoding="utf-8")
    return script


def first_failure(data: dict) -> str | None:
    return data["outcome"]["first_failure"]


# ----------------------------------------------------------------------------- the examples


@pytest.mark.parametrize("example, total", [(ENCODER_DECODER, 43), (VIT, 26)])
def test_every_snapshot_of_an_example_is_captured_and_no_check_fails(tmp_path, example, total):
    code, data = trace(example, tmp_path)
    assert code == 0
    snaps = data["snapshots"]
    assert len(snaps) == total and all(s["captured"] for s in snaps)
    assert [s["label"] for s in snaps if s["check"]["passed"] is False] == []
    assert sum(s["check"]["passed"] is True for s in snaps) >= total // 3  # the checks really ran
    assert all(s["check"]["passed"] in (True, False, None) for s in snaps)
    for s in snaps:
        assert (tmp_path / "t" / s["page"]).is_file()
        assert s["layout"]["status"] in ("match", "layout", "unbound")
    for page in ("index.md", "questions.md", "print.md", "data/index.json"):
        assert (tmp_path / "t" / page).is_file()
    assert_documented(data, traced=True)  # the one snapshots.json schema (How it works)


def test_the_overview_states_the_counts_the_first_failure_and_the_run_stamp(tmp_path):
    trace(ENCODER_DECODER, tmp_path)
    overview = (tmp_path / "t" / "index.md").read_text(encoding="utf-8")
    assert "**43 of 43**" in overview
    assert "0 failed" in overview
    assert "| First failing snapshot (pipeline order) | none |" in overview
    sha = __import__("hashlib").sha256(ENCODER_DECODER.read_bytes()).hexdigest()
    assert sha in overview and "`7` (`torch.manual_seed`)" in overview and torch.__version__ in overview


def test_dimensions_are_bound_from_the_users_tensors(tmp_path):
    _, data = trace(ENCODER_DECODER, tmp_path)
    assert data["dims"] == {"B": 1, "S": 7, "T": 6, "C": 128, "h": 4, "hs": 32, "F": 256, "V": 5}
    page = (tmp_path / "t" / "encoder" / "10-attention-scores-before-softmax.md").read_text(encoding="utf-8")
    assert "`(1, 4, 7, 7)` against `(B, h, S, S)` = `(1, 4, 7, 7)`" in page
    assert 'hl_lines="' in page and "# Snapshot #10" in page  # the user's code with the marked line highlighted


# ----------------------------------------------------------------------------- bugs, and where they first show

ED_BUGS = {
    "softmax over the wrong axis": ("torch.softmax(scores_pre_mask, dim=-1)", "torch.softmax(scores_pre_mask, dim=-2)", "#11"),
    "missing 1/√d": ("q_heads @ k_heads.transpose(-2, -1) / math.sqrt(d_head)", "q_heads @ k_heads.transpose(-2, -1)", "#10"),
    "mask lets a position see the future": ('float("-inf")), diagonal=1)', 'float("-inf")), diagonal=2)', "#25"),
    "residual dropped": ("layer_norm(res1_a + res1_b,", "layer_norm(res1_b,", "#15"),
    "wrong head split": ("x.view(B, L, n_heads, C // n_heads).transpose(1, 2)", "x.view(B, n_heads, L, C // n_heads)", "#12"),
}
VIT_BUGS = {
    "softmax over the wrong axis": ("attn_probs = attn_scores.softmax(dim=-1)", "attn_probs = attn_scores.softmax(dim=-2)", "S13"),
    "missing 1/√d": ("k.transpose(-2, -1) / math.sqrt(C // HEADS)", "k.transpose(-2, -1)", "S12"),
    "residual dropped": ("x_after_attn = x_in + attn_out", "x_after_attn = attn_out", "S16"),
    "MLP residual dropped": ("x_after_mlp = x_after_attn + ff_out", "x_after_mlp = ff_out", "S19"),
}


@pytest.mark.parametrize("example, old, new, label", [
    *[pytest.param(ENCODER_DECODER, *bug, id=f"encoder-decoder: {name}") for name, bug in ED_BUGS.items()],
    *[pytest.param(VIT, *bug, id=f"vit: {name}") for name, bug in VIT_BUGS.items()],
])
def test_a_bug_is_caught_by_the_right_snapshot_and_named_as_the_first_failure(tmp_path, example, old, new, label):
    code, data = trace(variant(tmp_path, example, old, new), tmp_path / "out")
    assert code == 1  # a failed check: the exit status CI reads
    assert first_failure(data).startswith(label + " ")
    failed = next(s for s in data["snapshots"] if s["label"] == label)
    assert failed["check"]["passed"] is False
    if "softmax" in old:
        assert "the softmax ran over the wrong axis: it is the columns (the query axis) that sum to 1" in failed["check"]["detail"]
    overview = (tmp_path / "out" / "t" / "index.md").read_text(encoding="utf-8")
    assert f"| First failing snapshot (pipeline order) | [{label} " in overview


@pytest.mark.parametrize("example, old, new, label", [
    pytest.param(ENCODER_DECODER, *ED_BUGS["softmax over the wrong axis"], id="encoder-decoder: softmax over the wrong axis"),
    pytest.param(ENCODER_DECODER, *ED_BUGS["mask lets a position see the future"], id="encoder-decoder: mask"),
    pytest.param(VIT, *VIT_BUGS["softmax over the wrong axis"], id="vit: softmax over the wrong axis"),
])
def test_a_figure_of_a_failed_snapshot_says_the_check_failed_and_claims_nothing_it_refuted(tmp_path, example, old, new, label):
    from transformer_trace.reports import REPORTS

    _, data = trace(variant(tmp_path, example, old, new), tmp_path / "out")
    catalogue = REPORTS[data["catalogue"]]
    page = next(s for s in data["snapshots"] if s["label"] == label)
    text = (tmp_path / "out" / "t" / page["page"]).read_text(encoding="utf-8")
    snap = next(s for s in catalogue.snapshots if catalogue.label(s.number) == label)
    assert snap.figures and page["figures"]
    for fid in snap.figures:  # drawn or not, the catalogue's caption (the step computed right) is not on the page
        assert escape_text(catalogue.figure(fid).caption) not in text and catalogue.figure(fid).caption not in text
    assert escape_text(f"The check failed on {label} (") in text
    _, clean = trace(example, tmp_path / "clean")
    assert "check failed" not in (tmp_path / "clean" / "t" / page["page"]).read_text(encoding="utf-8")


def test_a_loop_that_feeds_every_block_the_embeddings_fails_at_the_second_layers_input(tmp_path):
    script = variant(tmp_path, VIT, "x_block2_out = encoder_block(x_block1_out, blocks[1])", "x_block2_out = encoder_block(x_pos, blocks[1])")
    _, first_hit = trace(script, tmp_path / "a")
    assert first_failure(first_hit) is None  # the first block is right
    _, second_hit = trace(script, tmp_path / "b", "--hit", "2")
    assert first_failure(second_hit).startswith("S08 ")
    s08 = next(s for s in second_hit["snapshots"] if s["label"] == "S08")
    # pass 2's input vs pass 1's output, in the script's variables (never the catalogue's record names)
    assert re.search(r"\w+ \(S08\) vs \w+ \(S20\)", s08["check"]["detail"]) and "blocks." not in s08["check"]["detail"]
    assert "(read: S08, S20 at pass 1)" in s08["check"]["detail"]  # and as the snapshots they were captured at
    # the evidence: the second block's input is the first block's (an earlier layer's tensor equal to the step; a later
    # one, the next block's input, equals a block's output on correct code too and is never taken)
    assert s08["check"]["evidence"]["name"] == "computed from another tensor", s08["check"]["detail"]
    assert "at an earlier layer (layer 0 of blocks)" in s08["check"]["evidence"]["message"]


def test_the_placeholders_that_name_one_pass_are_filled_from_the_passes_the_script_ran(tmp_path):
    _, data = trace(VIT, tmp_path)  # six blocks, where the bundled ViT presets have twelve
    by_label = {s["label"]: s for s in data["snapshots"]}
    # the last pass's (6) and the second's, said in the script's variables and the passes read
    assert by_label["S22"]["check"]["passed"] is True and "x_last (S22) vs x_after_mlp (S19)" in by_label["S22"]["check"]["detail"]
    assert "(read: S22, S19 at pass 6)" in by_label["S22"]["check"]["detail"]
    assert by_label["S21"]["check"]["passed"] is True and "x_block2_out (S21) vs x_after_mlp (S19)" in by_label["S21"]["check"]["detail"]
    assert "(read: S21, S19 at pass 2)" in by_label["S21"]["check"]["detail"]
    parts = by_label["S21"]["checks"]  # the declared checks, each with its own verdict: the block re-run needs the weights
    assert [(c["name"], c["passed"], c["status"]) for c in parts] == [
        ("is the whole block run again on its input", None, "not checkable"),
        ("is the second block's last residual sum", True, "passed")]
    script = variant(tmp_path, VIT, "x_block2_out = encoder_block(x_block1_out, blocks[1])", "x_block2_out = encoder_block(x_block1_out, blocks[1]) * 2")
    code, doubled = trace(script, tmp_path / "out")
    s21 = next(s for s in doubled["snapshots"] if s["label"] == "S21")
    # the block's own output at its second pass is not what S21 holds; doubling is no bug form a check knows, so it is
    # unrecognised (never red without evidence), with the difference, and the trace does not fail for it
    assert s21["check"]["status"] == "unrecognised" and "x_block2_out (S21) vs x_after_mlp (S19)" in s21["check"]["detail"]
    assert code == 0 and first_failure(doubled) is None


def test_the_catalogues_own_checks_run_on_the_captured_tensors_and_weight_checks_are_not_checkable(tmp_path):
    _, data = trace(ENCODER_DECODER, tmp_path)
    by_label = {s["label"]: s for s in data["snapshots"]}
    assert by_label["#10"]["check"]["name"] == "equals Q·Kᵀ / √hs"  # transformer_trace.checks.ScaledScores, as the catalogue declares it
    assert "recomputed Q·Kᵀ/√32 per head:" in by_label["#10"]["check"]["detail"]
    assert by_label["#7"]["check"]["passed"] is None
    # the weights said with the student's variable and line, not the catalogue's module name their code does not have
    assert by_label["#7"]["check"]["detail"] == (
        "needs the weights `q` was computed with, which a trace reads only from the nn.Module calls of its marked line "
        "(encoder_decoder_trace.py:76) and the module attributes that line reads: it made none that gives them")
    assert by_label["#15"]["check"]["passed"] is True and "fitted per feature" in by_label["#15"]["check"]["detail"]  # no weights: gain and bias fitted
    assert by_label["#1"]["check"]["passed"] is True  # the IDs are whole and ≥ 0; that they spell the sentence needs the run's input
    assert by_label["#1"]["check"]["name"] == "token IDs are whole numbers ≥ 0"
    script = variant(tmp_path, ENCODER_DECODER, "q_heads @ k_heads.transpose(-2, -1) / math.sqrt(d_head)", "q_heads @ k_heads.transpose(-2, -1)")
    _, buggy = trace(script, tmp_path / "out")
    scores = next(s for s in buggy["snapshots"] if s["label"] == "#10")["check"]
    assert scores["passed"] is False and "without the 1/√32" in scores["detail"]


@pytest.mark.parametrize("label", ["#31", "#32"])
def test_a_not_checkable_check_names_everything_it_lacks_not_only_the_missing_tensor(tmp_path, label):
    _, data = trace(ENCODER_DECODER, tmp_path)  # cross-attention K and V: LinearOf(memory, W_k / W_v)
    detail = next(s for s in data["snapshots"] if s["label"] == label)["check"]["detail"]
    # what is missing in words (the model's declaration of memory), and which line would show it
    assert detail.startswith("needs the last encoder layer's output, read by every cross-attention (no marked line of "
                             "yours shows it: mark the line that computes it); the weights `")
    assert "cross_attn" not in detail and f"(encoder_decoder_trace.py:{ {'#31': 110, '#32': 111}[label]})" in detail


def test_a_check_missing_tensors_lists_the_weights_it_also_lacks_but_not_weights_it_can_do_without():
    from transformer_trace.checks import GeluOfLinear, LinearOf
    from transformer_trace.sources import MissingTensor, ModuleRef, NoWeights, Ref, TensorDict

    source = TensorDict({"out": torch.zeros(2, 3)})
    lacking = LinearOf(out=Ref("out"), x=Ref("x"), module=ModuleRef("fc")).run(source)
    assert lacking.missing == ("x", "module fc") and [type(lack) for lack in lacking.lacks] == [MissingTensor, NoWeights]
    optional = GeluOfLinear(out=Ref("out"), x=Ref("x"), module=ModuleRef("fc")).run(source)  # GELU's range needs no weights
    assert optional.missing == ("x",)


def test_what_a_trace_lacks_is_typed_not_read_from_words():
    from transformer_trace.checks import UnfittableWeights
    from transformer_trace.sources import MissingTensor, NoInput, NoWeights, NotCheckable
    from transformer_trace.trace.reading.checking import TensorLabel, needed

    labels = {"blocks.0.input": TensorLabel("S08", at_hit=2), "patches": TensorLabel("S03", sliced=True), "q": TensorLabel("S10", "q")}
    assert str(labels["blocks.0.input"]) == "S08 at pass 2" and labels["blocks.0.input"].at_hit == 2
    assert needed(MissingTensor("blocks.0.input"), labels) == "snapshot S08 at pass 2"
    assert needed(MissingTensor("patches"), labels) == "the whole of what S03 shows a slice of"
    assert needed(MissingTensor("q"), labels) == "snapshot S10 (q)"
    assert needed(MissingTensor("memory"), labels) == "memory, which no marked line of yours shows"  # no page to read
    # a name that reads like another kind is judged by what raised it, not by its words
    assert needed(MissingTensor("module the whole"), labels) == "module the whole, which no marked line of yours shows"
    assert needed(NoWeights("module fc"), labels) == "the model's weights (module fc), which a trace does not capture"
    assert needed(NoInput("input src"), labels) == "the run's input src, which a trace does not know"
    assert needed(UnfittableWeights("the LayerNorm's weights", "2 positions"), labels).startswith("the LayerNorm's weights (with fewer than 3")
    assert needed(NotCheckable("the table", "it holds rows 0…4 only"), labels) == "the table (it holds rows 0…4 only)"


def test_a_layouts_status_is_an_enum_and_snapshots_json_writes_its_value(tmp_path):
    dims = {"B": 1, "S": 6, "C": 32}
    assert layout(torch.randn(1, 6, 32), ("B", "S", "C"), dims, {}).status is LayoutStatus.MATCH
    unbound = layout(torch.randn(1, 6, 32), ("B", "S", "D"), dims, {})
    assert unbound.status is LayoutStatus.UNBOUND and unbound.unbound == ("D",)
    _, data = trace(VIT, tmp_path)
    assert {s["layout"]["status"] for s in data["snapshots"]} <= {status.value for status in LayoutStatus}


def test_a_tensor_with_unbound_dimensions_is_not_checkable_naming_them_not_failed(tmp_path):
    script = tmp_path / "unbound.py"
    script.write_text("import torch\nsrc_ids = [1, 2, 3]  # Snapshot #1\nsrc_embed = torch.randn(3)  # Snapshot #4\n"
                      "src_with_pos = src_embed + 1  # Snapshot #5\n", encoding="utf-8")  # no tensor shows B or C
    code, data = trace(script, tmp_path / "out")
    positions = next(s for s in data["snapshots"] if s["label"] == "#5")
    assert code == 0 and positions["layout"]["status"] == "unbound"
    assert positions["check"]["passed"] is None  # it read "FAILED: the captured tensors do not fit the claim"
    assert positions["check"]["detail"].startswith("needs the dimensions B, C bound (no captured tensor shows their sizes, so your shape (3,)")
    assert data["outcome"]["first_failure"] is None


def test_a_corner_of_a_tensor_no_capture_shows_whole_is_still_read_as_what_it_shows():
    corner = layout(torch.randn(5, 5), ("min(V_src, 5)", "min(C, 5)"), {"C": 32}, {})  # src_emb[:5, :5]: V_src unbound
    assert corner.status is LayoutStatus.UNBOUND and corner.canonical is not None
    assert layout(torch.randn(6, 5), ("min(V_src, 5)", "min(C, 5)"), {"C": 32}, {}).canonical is None  # more rows than the corner has


@pytest.mark.parametrize("script", [ENCODER_DECODER, VIT, Path(__file__).parent / "trace_fixtures" / "nano_gpt_style.py"], ids=lambda p: p.stem)
def test_every_block_of_a_traced_report_renders_or_falls_back_naming_what_the_trace_lacks(tmp_path, monkeypatch, script):
    import transformer_trace.render as render
    from transformer_trace.sources import NotCheckable

    rendered, lacked = [], []
    original = render.render_block

    def recording(template, block, context, **shown):
        try:
            text = original(template, block, context, **shown)
        except NotCheckable as exc:  # anything else (a template bug) propagates and fails the trace
            lacked.append(exc)
            raise
        rendered.append(block)
        return text

    monkeypatch.setattr(render, "render_block", recording)
    code, _ = trace(script, tmp_path)
    assert code == 0 and rendered and lacked
    pages = "\n".join(p.read_text(encoding="utf-8") for p in (tmp_path / "t").rglob("*.md"))
    for exc in lacked:  # each fallback says what its block needed
        assert f"needs {escape_text(exc.missing)}" in pages, exc.missing


def test_a_template_bug_in_a_trace_is_raised_not_turned_into_a_fallback():
    from types import SimpleNamespace

    from transformer_trace.render import _written, environment

    template = environment().from_string('{% block s1 %}{{ 1 + "a" }}{% endblock %}')
    with pytest.raises(TypeError, match="unsupported operand"):
        _written(SimpleNamespace(model=None), template, "s1", {}, lambda needs: f"fallback: {needs}")


def test_an_entry_a_users_smaller_tensor_lacks_is_not_checkable_naming_it():
    from transformer_trace.sources import NotCheckable
    from transformer_trace.tensors import TensorView

    view = TensorView("07_q", torch.zeros(1, 3, 4))
    assert view.at(0, 2, 3) == 0.0
    with pytest.raises(NotCheckable, match=r"entry \[0, 5, 0\] of 07_q: the tensor has shape \(1, 3, 4\)"):
        view.at(0, 5, 0)


def test_a_snapshot_is_judged_on_its_own_capture_where_a_later_one_shows_the_same_record_point(tmp_path):
    script = variant(tmp_path, ENCODER_DECODER, "res1_a, res1_b = enc_in, attn_out  # Snapshot #14",
                     "res1_a, res1_b = enc_in * 2, attn_out  # Snapshot #14")  # #14 and #6 both show the block input
    _, data = trace(script, tmp_path / "out")
    by_label = {s["label"]: s for s in data["snapshots"]}
    assert by_label["#6"]["check"]["passed"] is True  # #6's verdict is about enc_in, not about #14's res1_a
    assert by_label["#15"]["check"]["passed"] is False  # LayerNorm(block input + attention output) is not what #15 holds
    assert first_failure(data).startswith("#15 ")


def test_a_check_whose_input_was_not_captured_says_which_snapshot_it_needs(tmp_path):
    script = variant(tmp_path, ENCODER_DECODER, "    d_head = q_heads.shape[-1]\n", "    d_head = q_heads.shape[-1]\n")
    source = script.read_text(encoding="utf-8").replace("split_heads(k, N_HEADS)  # Snapshot #12", "split_heads(k, N_HEADS)")
    source = source.replace("split_heads(q, N_HEADS)  # Snapshot #12", "split_heads(q, N_HEADS)")
    source = source.replace("split_heads(v, N_HEADS)  # Snapshot #12", "split_heads(v, N_HEADS)")
    # nor q and k, whose head split would give #12's (tests/test_trace_derived.py)
    source = source.replace('enc_in @ p["sa_W_q"]  # Snapshot #7', 'enc_in @ p["sa_W_q"]')
    source = source.replace('enc_in @ p["sa_W_k"]  # Snapshot #8', 'enc_in @ p["sa_W_k"]')
    script.write_text(source, encoding="utf-8")
    _, data = trace(script, tmp_path / "out")
    by_label = {s["label"]: s for s in data["snapshots"]}
    assert by_label["#12"]["captured"] is False
    assert by_label["#10"]["check"]["passed"] is None and "needs snapshot #12" in by_label["#10"]["check"]["detail"]
    assert "40 of 43" in (tmp_path / "out" / "t" / "index.md").read_text(encoding="utf-8")


def test_a_snapshot_of_several_tensors_captured_in_part_names_the_tensors_it_lacks(tmp_path):
    script = variant(tmp_path, ENCODER_DECODER, "split_heads(k, N_HEADS)  # Snapshot #12", "split_heads(k, N_HEADS)")
    script.write_text(script.read_text(encoding="utf-8").replace("split_heads(v, N_HEADS)  # Snapshot #12", "split_heads(v, N_HEADS)"),
                      encoding="utf-8")
    _, data = trace(script, tmp_path / "out")
    by_label = {s["label"]: s for s in data["snapshots"]}
    assert by_label["#12"]["captured"] is True and by_label["#12"]["check"]["passed"] is None
    assert "needs snapshot #12 (k_heads), snapshot #12 (v_heads)" in by_label["#12"]["check"]["detail"]  # not "needs #12" on #12


# ----------------------------------------------------------------------------- hits, values, layouts


def test_hit_chooses_which_pass_of_a_line_the_pages_show_and_data_keeps_every_hit(tmp_path):
    _, first = trace(ENCODER_DECODER, tmp_path / "a")
    _, second = trace(ENCODER_DECODER, tmp_path / "b", "--hit", "2")
    q1 = next(s for s in first["snapshots"] if s["label"] == "#7")
    q2 = next(s for s in second["snapshots"] if s["label"] == "#7")
    assert q1["first"] != q2["first"]  # the second encoder layer
    index = json.loads((tmp_path / "a" / "t" / "data" / "index.json").read_text(encoding="utf-8"))
    names = {t["name"] for t in index["tensors"]}
    assert {"hit1_07_q", "hit2_07_q"} <= names
    page = (tmp_path / "b" / "t" / "encoder" / "07-self-attention-queries-q.md").read_text(encoding="utf-8")
    assert "hit 2 of 2" in page
    src = next(s for s in second["snapshots"] if s["label"] == "#1")  # ran once: its only hit, said so
    assert src["captured"]


def test_a_hit_past_the_last_pass_shows_and_checks_the_last_pass(tmp_path):
    _, last = trace(VIT, tmp_path / "a", "--hit", "6")  # the example has 6 blocks
    _, past = trace(VIT, tmp_path / "b", "--hit", "99")
    checks = lambda data: {s["label"]: (s["check"]["passed"], s["check"]["detail"]) for s in data["snapshots"]}
    assert checks(past) == checks(last)  # not layer 99's record names, which no pass filled
    assert explanation_of((tmp_path / "b" / "t" / "block" / "08-block-input.md").read_text(encoding="utf-8")) == \
        explanation_of((tmp_path / "a" / "t" / "block" / "08-block-input.md").read_text(encoding="utf-8"))


def test_each_attention_snapshot_gets_the_reports_explorer_with_one_layer_per_pass(tmp_path):
    trace(ENCODER_DECODER, tmp_path, "--hit", "2")
    index = json.loads((tmp_path / "t" / "data" / "index.json").read_text(encoding="utf-8"))
    groups = {g["key"]: g for g in index["attention"]}
    assert set(groups) == {"encoder-self", "decoder-self", "cross"}  # the report's own exploration groups
    assert groups["cross"]["layers"] == ["decoder.layers.0.cross_attn.probs", "decoder.layers.1.cross_attn.probs"]
    shapes = {t["name"]: t["shape"] for t in index["tensors"]}
    assert shapes["decoder.layers.0.cross_attn.probs"] == [1, 4, 6, 7]  # (B, h, T, S): target queries, source keys
    page = (tmp_path / "t" / "decoder" / "34-cross-attention-score-matrix-after-softmax.md").read_text(encoding="utf-8")
    assert 'data-group="cross" data-layer="1"' in page  # opens on the pass the pages show


@pytest.mark.parametrize("example", [ENCODER_DECODER, VIT])
def test_a_traced_attention_tensors_axis_labels_come_from_its_declared_shape_and_fit_it(tmp_path, example):
    """Every axis of a traced attention tensor is labelled from the declaration of its record point (the cross-attention's
    queries by the target's T positions, its keys by the source's S), with as many labels as the axis has entries."""
    trace(example, tmp_path)
    index = json.loads((tmp_path / "t" / "data" / "index.json").read_text(encoding="utf-8"))
    tensors = {t["name"]: t for t in index["tensors"]}
    assert index["attention"]
    for group in index["attention"]:
        for name in group["layers"]:
            shape, keys = tensors[name]["shape"], tensors[name]["labels"]
            assert keys[1:] == ["heads", group["rows"], group["cols"]]
            assert [len(index["labels"][k]) for k in keys[1:]] == shape[1:]
    if example == ENCODER_DECODER:
        cross = next(g for g in index["attention"] if g["key"] == "cross")
        assert (cross["rows"], cross["cols"]) == ("tgt_tokens", "src_tokens")
        assert tensors[cross["layers"][0]]["shape"][2:] == [6, 7]


def test_the_bundled_drawings_draw_the_users_tensors_with_captions_that_claim_nothing(tmp_path):
    _, data = trace(ENCODER_DECODER, tmp_path)
    figures = {f for s in data["snapshots"] for f in s["figures"]}
    assert {"figures/enc_attention.png", "figures/mask.png", "figures/cross_attention.png"} <= figures
    assert all((tmp_path / "t" / f).read_bytes().startswith(b"\x89PNG") for f in figures)
    assert "figures/predictions.png" in figures  # the target vocabulary's words, stood in for by the user's IDs
    assert "figures/tokens.png" not in figures  # the vocabularies' words: a trace does not know them, and the page says so
    ids = (tmp_path / "t" / "input" / "01-raw-input-tokens-ids.md").read_text(encoding="utf-8")
    assert "not drawn" in ids and f"Words of both sentences with their vocabulary IDs{escape_text('.')} — needs input" in ids
    page = (tmp_path / "t" / "decoder" / "26-masked-attention-scores-after-mask-softmax.md").read_text(encoding="utf-8")
    captions = [line for line in page.splitlines() if "<figcaption>" in line]
    assert "../figures/dec_attention.png" in page and captions and not any("exactly 0" in c for c in captions)


def test_lists_of_ints_scalars_and_dicts_of_tensors_are_captured(tmp_path):
    script = tmp_path / "values.py"
    script.write_text(textwrap.dedent("""\
        import torch
        ids = [3, 1, 2]  # Snapshot #1
        n = 7  # trace: count
        parts = {"a": torch.ones(2, 3), "b": torch.zeros(1)}  # Snapshot #2
        import numpy
        table = numpy.arange(12.0).reshape(3, 4)  # Snapshot #3
    """), encoding="utf-8")
    code, data = trace(script, tmp_path / "out")
    assert code == 0
    by_label = {s["label"]: s for s in data["snapshots"]}
    assert by_label["#1"]["first"] == [3, 1, 2] and by_label["#1"]["dtype"] == "int64"
    assert by_label["#2"]["shape"] == [2, 3]
    assert by_label["#3"]["shape"] == [3, 4] and by_label["#3"]["first"][:3] == [0.0, 1.0, 2.0]
    assert "a dict of 2 tensors" in (tmp_path / "out" / "t" / "input" / "02-target-tokens-ids.md").read_text(encoding="utf-8")


def test_heads_after_positions_is_recognised_as_a_layout_not_refused():
    dims = {"B": 1, "h": 4, "S": 6, "hs": 8, "C": 32}
    heads_first = torch.randn(1, 4, 6, 8)
    found = layout(heads_first.transpose(1, 2), ("B", "h", "S", "hs"), dims, {})
    assert found.status is LayoutStatus.LAYOUT and torch.equal(found.canonical, heads_first)
    joined = layout(heads_first, ("B", "S", "C"), dims, {})  # (B, h, S, hs) where (B, S, C) is named
    assert joined.status is LayoutStatus.LAYOUT and joined.canonical.shape == (1, 6, 32)
    assert layout(torch.randn(1, 6, 31), ("B", "S", "C"), dims, {}).status is LayoutStatus.MISMATCH


def test_a_patch_convolutions_output_is_read_as_the_patch_embeddings_it_becomes():
    """jeonsworld/ViT-pytorch marks `x = self.patch_embeddings(x)`: (B, C, h', w') before flatten(2).transpose(1, 2)."""
    dims = {"B": 2, "N": 4, "C": 32}
    grid = torch.randn(2, 32, 2, 2)
    found = layout(grid, ("B", "N", "C"), dims, {})
    assert found.status is LayoutStatus.LAYOUT and torch.equal(found.canonical, grid.flatten(2).transpose(1, 2))
    assert layout(torch.randn(2, 32, 2, 3), ("B", "N", "C"), dims, {}).status is LayoutStatus.MISMATCH
    assert layout(grid, ("B", "T", "C"), {"B": 2, "T": 4, "C": 32}, {}).status is LayoutStatus.MISMATCH


def test_a_legitimate_layout_in_a_script_is_read_in_the_catalogues_layout_and_checked(tmp_path):
    script = variant(tmp_path, ENCODER_DECODER, "attn_concat = merge_heads(attn_weights @ v_heads)  # Snapshot #13",
                     "attn_concat = attn_weights @ v_heads  # Snapshot #13\n    attn_concat = merge_heads(attn_concat)")
    _, data = trace(script, tmp_path / "out")
    concat = next(s for s in data["snapshots"] if s["label"] == "#13")
    assert concat["shape"] == [1, 4, 7, 32] and concat["layout"]["status"] == "layout"
    assert "already split into 4 heads" in concat["layout"]["note"] and concat["check"]["passed"] is True


def test_a_shape_that_does_not_fit_is_shown_explained_and_unrecognised_not_failed(tmp_path):
    script = variant(tmp_path, ENCODER_DECODER, "    ff_in = ln1_out  # Snapshot #16", "    ff_in = ln1_out[..., :64]  # Snapshot #16")
    script.write_text(script.read_text(encoding="utf-8").replace("ff1 = ff_in @ p[\"W_1\"]", "ff1 = ln1_out @ p[\"W_1\"]")
                      .replace("layer_norm(ff_in + ff2, p[\"ln2_g\"]", "layer_norm(ln1_out + ff2, p[\"ln2_g\"]"), encoding="utf-8")
    _, data = trace(script, tmp_path / "out")
    ff_in = next(s for s in data["snapshots"] if s["label"] == "#16")
    assert ff_in["layout"]["status"] == "mismatch" and "axis 2 is 64, C = 128" in ff_in["layout"]["note"]
    # a layout the catalogue does not read is no evidence of a bug (a loop over heads gives (N, hs) slices too)
    assert ff_in["check"]["passed"] is None and ff_in["check"]["status"] == "unrecognised"
    assert "cannot be read as" in ff_in["check"]["detail"]
    page = (tmp_path / "out" / "t" / "encoder" / "16-feed-forward-input.md").read_text(encoding="utf-8")
    assert "DOES NOT MATCH" in page and "unrecognised" in page


def test_a_script_without_any_batch_axis_is_read_as_a_batch_of_one_and_checked(tmp_path):
    script = tmp_path / "no_batch.py"
    script.write_text(textwrap.dedent("""\
        import math
        import torch
        torch.manual_seed(0)
        S, C, h = 5, 32, 4
        x = torch.randn(S, C)  # Snapshot #6
        q, k, v = x @ torch.randn(C, C), x @ torch.randn(C, C), x @ torch.randn(C, C)  # Snapshot #7, #8, #9
        q_heads = q.view(S, h, C // h).transpose(0, 1)  # Snapshot #12
        k_heads = k.view(S, h, C // h).transpose(0, 1)  # Snapshot #12
        v_heads = v.view(S, h, C // h).transpose(0, 1)  # Snapshot #12
        scores = q_heads @ k_heads.transpose(-2, -1) / math.sqrt(C // h)  # Snapshot #10
        weights = scores.softmax(-1)  # Snapshot #11
        concat = (weights @ v_heads).transpose(0, 1).reshape(S, C)  # Snapshot #13
        """), encoding="utf-8")
    code, data = trace(script, tmp_path / "out")
    by_label = {s["label"]: s for s in data["snapshots"] if s["captured"]}
    assert code == 0 and data["dims"]["B"] == 1
    for label in ("#10", "#11", "#12", "#13"):
        assert by_label[label]["check"]["passed"] is True, (label, by_label[label]["check"]["detail"])
        assert "batch axis (B = 1) is left out" in by_label[label]["layout"]["note"]


def test_token_ids_of_a_batch_of_several_sentences_are_read_as_the_catalogues_first_item_and_checked(tmp_path):
    script = tmp_path / "batch.py"
    script.write_text(textwrap.dedent("""\
        import torch
        torch.manual_seed(0)
        src_ids = [[1, 2, 3, 4], [4, 3, 2, 1]]  # Snapshot #1
        table = torch.randn(5, 8)
        emb_weight_slice = table[:5, :5]  # Snapshot #3
        src_embed = table[torch.tensor(src_ids)]  # Snapshot #4
        """), encoding="utf-8")
    code, data = trace(script, tmp_path / "out")
    by_label = {s["label"]: s for s in data["snapshots"] if s["captured"]}
    assert code == 0 and data["dims"]["B"] == 2
    assert by_label["#1"]["check"]["passed"] is True and "first item" in by_label["#1"]["layout"]["note"]
    assert by_label["#4"]["check"]["passed"] is True, by_label["#4"]["check"]["detail"]  # the lookup reads every sentence's IDs


def test_a_legitimate_layout_captured_first_does_not_bind_the_dimensions_wrong(tmp_path):
    script = tmp_path / "heads_after_positions.py"
    script.write_text(textwrap.dedent("""\
        import math
        import torch
        torch.manual_seed(0)
        q = torch.randn(1, 5, 2, 4)  # BREAKPOINT S09
        k = torch.randn(1, 5, 2, 4)  # BREAKPOINT S10
        scores = torch.einsum("bnhd,bmhd->bhnm", q, k) / math.sqrt(4)  # BREAKPOINT S12
        probs = scores.softmax(-1)  # BREAKPOINT S13
        """), encoding="utf-8")
    _, data = trace(script, tmp_path / "out")
    by_label = {s["label"]: s for s in data["snapshots"] if s["captured"]}
    assert data["dims"]["h"] == 2 and data["dims"]["N1"] == 5  # (B, N1, h, hs) read as heads after positions, not h = 5
    assert by_label["S09"]["layout"]["status"] == "layout"
    assert by_label["S12"]["check"]["passed"] is True and by_label["S13"]["check"]["passed"] is True


def test_an_odd_layout_does_not_mislabel_a_dimension():
    legend = Legend({"B": "", "S": "", "h": "", "hs": "", "C": ""}, relations=(Quotient("hs", "C", "h"),))
    dims = bind_dims([(("B", "S", "C"), (1, 6, 32)), (("B", "h", "S", "hs"), (1, 6, 4, 8)), (("B", "h", "S", "S"), (1, 4, 6, 6))], legend)
    assert dims["h"] == 4 and dims["hs"] == 8


def test_report_none_makes_a_report_of_the_scripts_own_points(tmp_path):
    script = tmp_path / "own.py"
    script.write_text("import torch\nx = torch.ones(2, 3)  # trace: inputs\nfor i in range(3):\n    y = x * i  # trace: scaled\n", encoding="utf-8")
    code, data = trace(script, tmp_path / "out", "--report", "none", "--hit", "3")
    assert code == 0 and [s["title"] for s in data["snapshots"]] == ["inputs", "scaled"]
    assert data["snapshots"][1]["first"][:2] == [2.0, 2.0]  # the third pass: i = 2
    assert "--report none --hit 3" in (tmp_path / "out" / "t" / "index.md").read_text(encoding="utf-8").replace("&#45;", "-")


def test_past_the_capture_budget_values_keep_their_shape_only_and_are_not_checkable(tmp_path, monkeypatch):
    import transformer_trace.trace.reading.capture as capture

    monkeypatch.setattr(capture, "CAPTURE_BUDGET_BYTES", 1000)
    script = tmp_path / "big.py"
    script.write_text("import torch\nsrc_ids = [1, 2]  # Snapshot #1\nsrc_embed = torch.zeros(1, 2, 400)  # Snapshot #4\n", encoding="utf-8")
    code, data = trace(script, tmp_path / "out")
    embed = next(s for s in data["snapshots"] if s["label"] == "#4")
    assert code == 0 and embed["check"]["passed"] is None and "not copied" in embed["check"]["detail"]


def test_a_huge_tensor_is_bounded_on_its_page_and_left_out_of_data(tmp_path):
    script = tmp_path / "huge.py"
    script.write_text("import torch\nsrc_ids = torch.arange(4_100_000)  # Snapshot #1\n", encoding="utf-8")
    code, _ = trace(script, tmp_path / "out")
    assert code == 0
    page = tmp_path / "out" / "t" / "input" / "01-raw-input-tokens-ids.md"
    assert page.stat().st_size < 20_000
    assert not list((tmp_path / "out" / "t" / "data").glob("01_*"))
    assert "over 4,000,000 values, is left out of the report's data/" in page.read_text(encoding="utf-8")  # said, not silent


# ----------------------------------------------------------------------------- markers


def test_marker_forms_and_what_each_one_marks(tmp_path):
    script = tmp_path / "forms.py"
    script.write_text(textwrap.dedent("""\
        a = 1  # BREAKPOINT S13
        b = 2  # Snapshot #13
        c = 3  # Snapshot 14
        d = 4  # BREAKPOINT G05
        e = 5  # trace: mine
        f = (1,
             2)  # Snapshot #15
        g = 6
        # BREAKPOINT S14 - the statement above
        h, i, j = 1, 2, 3  # BREAKPOINT S09, S10, S11
        k = 7  # Snapshot #16 - Feed-forward input: b
        x = 0  # Snapshot #17: a, b

        # SNAPSHOT #18 - a heading over the statement below
        y = 8
    """), encoding="utf-8")
    found = [(m.numbering, m.number, m.point, m.names, m.first, m.last) for m in find_markers(script, numberings(REPORTS))]
    assert found == [
        ("vit", 13, None, ("a",), 1, 1), ("encoder-decoder", 13, None, ("b",), 2, 2), ("encoder-decoder", 14, None, ("c",), 3, 3),
        ("gpt", 5, None, ("d",), 4, 4), ("custom", None, "mine", ("e",), 5, 5), ("encoder-decoder", 15, None, ("f",), 6, 7),
        ("vit", 14, None, ("g",), 8, 8), ("vit", 9, None, ("h",), 10, 10), ("vit", 10, None, ("i",), 10, 10),
        ("vit", 11, None, ("j",), 10, 10), ("encoder-decoder", 16, None, ("k",), 11, 11), ("encoder-decoder", 17, None, ("a", "b"), 12, 12),
        ("encoder-decoder", 18, None, ("y",), 15, 15),
    ]


def test_a_line_shared_by_several_callers_gives_each_caller_its_snapshot(tmp_path):
    script = tmp_path / "shared.py"
    script.write_text(textwrap.dedent("""\
        import torch

        def project(x):
            q = x * 2  # SNAPSHOT #7 or #21 or #30 - Q (depending on caller)
            return q

        def encoder_layer(x):
            return project(x)

        def decoder_layer(y):
            masked = project(y)
            return project(masked + 1)

        x = torch.ones(1, 3, 4)
        for _ in range(2):
            x = encoder_layer(x)
        decoder_layer(torch.ones(1, 2, 4))
    """), encoding="utf-8")
    code, data = trace(script, tmp_path / "out", "--hit", "2")
    assert code == 0
    by_label = {s["label"]: s for s in data["snapshots"]}
    assert by_label["#7"]["shape"] == [1, 3, 4] and by_label["#7"]["first"][0] == 4.0  # the encoder's second call
    assert by_label["#21"]["shape"] == [1, 2, 4] and by_label["#21"]["first"][0] == 2.0  # the decoder's first caller
    assert by_label["#30"]["first"][0] == 6.0  # its second caller


def test_two_markers_on_a_line_that_assigns_one_name_read_the_catalogues_variables_where_they_exist(tmp_path):
    script = tmp_path / "seed_style.py"
    script.write_text(textwrap.dedent("""\
        import torch
        res1_a, res1_b = torch.ones(1, 3, 4), torch.arange(12.0).reshape(1, 3, 4)
        x = torch.nn.functional.layer_norm(res1_a + res1_b, (4,))  # SNAPSHOT #14 - Residual connection tensors; SNAPSHOT #15 - Layer norm output
    """), encoding="utf-8")
    code, data = trace(script, tmp_path / "out")
    by_label = {s["label"]: s for s in data["snapshots"]}
    assert code == 0 and by_label["#14"]["variable"] == "res1_a, res1_b" and by_label["#15"]["variable"] == "x"
    assert by_label["#15"]["check"]["passed"] is True  # LayerNorm of the two operands of #14


@pytest.mark.parametrize(("operands", "read_by_14"), [("res1_a, res1_b", "res1_a, res1_b"), ("left, right", "x")])
def test_two_markers_on_a_line_read_what_it_assigns_where_the_catalogues_variables_are_missing(tmp_path, operands,
                                                                                                read_by_14):
    script = tmp_path / "seed_style.py"
    first, second = operands.split(", ")
    script.write_text(textwrap.dedent(f"""\
        import torch
        {operands} = torch.ones(1, 3, 4), torch.arange(12.0).reshape(1, 3, 4)
        x = torch.nn.functional.layer_norm({first} + {second}, (4,))  # SNAPSHOT #14 - Residual connection tensors; SNAPSHOT #15 - Layer norm output
    """), encoding="utf-8")
    code, data = trace(script, tmp_path / "out")
    by_label = {s["label"]: s for s in data["snapshots"]}
    assert code == 0 and by_label["#14"]["variable"] == read_by_14 and by_label["#15"]["variable"] == "x"
    assert by_label["#14"]["captured"] and by_label["#15"]["captured"]


def test_code_marked_the_way_the_seed_report_marked_it_is_traced(tmp_path):
    """nn.Module classes, one attention module for the encoder, the masked and the cross-attention ("#7 or #21 or #30"),
    a comment used as a heading (#10), two markers on a line that assigns one name (#14, #15)."""
    code, data = trace(Path(__file__).parent / "trace_fixtures" / "seed_style.py", tmp_path)
    assert code == 0
    by_label = {s["label"]: s for s in data["snapshots"]}
    assert by_label["#7"]["shape"] == [1, 6, 128] and by_label["#21"]["shape"] == [1, 5, 128] and by_label["#30"]["shape"] == [1, 5, 128]
    assert by_label["#31"]["shape"] == [1, 6, 128]  # cross-attention keys: from the encoder's 6 positions
    assert by_label["#10"]["variable"] == "scores" and by_label["#10"]["check"]["passed"] is True
    assert by_label["#14"]["variable"] == "res1_a, res1_b" and by_label["#15"]["check"]["passed"] is True
    assert by_label["#27"]["captured"] and "seed_style.py:68" in data["outcome"]["warnings"][0]  # the cross-attention's heads
    assert first_failure(data) is None


def test_a_shared_line_with_another_number_of_callers_is_not_assigned_and_says_so(tmp_path):
    script = tmp_path / "shared.py"
    script.write_text("def project(x):\n    q = x * 2  # SNAPSHOT #7 or #21\n    return q\n\nproject(1)\n", encoding="utf-8")
    code, data = trace(script, tmp_path / "out")
    assert code == 0 and not any(s["captured"] for s in data["snapshots"])
    assert "called from 1 line of your code for 2 snapshots" in data["outcome"]["warnings"][0]


# ----------------------------------------------------------------------------- bad input: one line, exit 2


def _error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) >= 1 and "Traceback" not in "\n".join(err)
    return err[-1]


@pytest.mark.parametrize("source, message", [
    ("x = (1,\n", "bad.py:1: syntax error"),
    ("x = 1\n", "no breakpoint comment found"),
    ("x = 1  # BREAKPOINT S27\n", "no S27"),
    ("x = 1  # Snapshot #44\n", "no #44"),
    ("len([1])  # Snapshot #3 missing_name\n", "there is no variable 'missing_name'"),
    ("print('hi')  # Snapshot #3\n", "assigns no variable"),
])
def test_bad_scripts_are_refused_in_one_line(tmp_path, capsys, source, message):
    script = tmp_path / "bad.py"
    script.write_text(source, encoding="utf-8")
    assert main(["trace", str(script), "--out", str(tmp_path / "out")]) == 2
    line = _error(capsys)
    assert line.startswith("error: ") and message in line
    if "no breakpoint" in message:
        assert "# BREAKPOINT S13" in line and "# Snapshot #13" in line and "# trace: name" in line


def test_markers_of_two_numberings_need_report_to_choose(tmp_path, capsys):
    script = tmp_path / "mixed.py"
    script.write_text("a = 1  # BREAKPOINT S01\nb = 2  # Snapshot #1\n", encoding="utf-8")
    assert main(["trace", str(script), "--out", str(tmp_path / "out")]) == 2
    assert "choose one with --report" in _error(capsys)
    assert main(["trace", str(script), "--out", str(tmp_path / "out"), "--report", "vit", "-q"]) == 0


def test_a_report_chosen_that_none_of_the_markers_number_is_refused_before_the_script_runs(tmp_path, capsys):
    script = tmp_path / "ed.py"
    script.write_text("print('ran')\nsrc_ids = [1, 2]  # Snapshot #1\n", encoding="utf-8")
    assert main(["trace", str(script), "--out", str(tmp_path / "out"), "--report", "vit"]) == 2
    error = _error(capsys)
    assert "no ViT marker" in error and "# BREAKPOINT S13" in error and "--report encoder-decoder" in error
    assert "ran" not in capsys.readouterr().out and not (tmp_path / "out").exists()


def test_a_refused_trace_leaves_the_previous_report_as_it_was(tmp_path):
    trace(ENCODER_DECODER, tmp_path)
    before = (tmp_path / "t" / "index.md").read_text(encoding="utf-8")
    broken = tmp_path / "broken" / "encoder_decoder_trace.py"
    broken.parent.mkdir()
    broken.write_text("x = (\n", encoding="utf-8")
    assert main(["trace", str(broken), "--out", str(tmp_path), "--name", "t", "-q"]) == 2
    assert (tmp_path / "t" / "index.md").read_text(encoding="utf-8") == before


@pytest.mark.parametrize("hit", ["1", "2"])
def test_a_nanogpt_style_script_traced_with_the_gpt_numbering_passes_every_checkable_claim(tmp_path, hit):
    code, data = trace(Path(__file__).parent / "trace_fixtures" / "nano_gpt_style.py", tmp_path, "--hit", hit)
    by_label = {s["label"]: s for s in data["snapshots"]}
    assert code == 0 and sum(s["captured"] for s in data["snapshots"]) == 27 and first_failure(data) is None
    assert all(by_label[label]["check"]["passed"] is True for label in ("G05", "G11", "G12", "G13", "G14", "G15", "G16", "G19", "G25"))


def test_gpt_numbering_is_read_and_checked(tmp_path):
    script = tmp_path / "gpt.py"
    script.write_text(textwrap.dedent("""\
        import torch
        torch.manual_seed(0)
        idx = torch.tensor([[72, 105, 33]])  # BREAKPOINT G01
        tok = torch.randn(256, 16)[idx]  # BREAKPOINT G02
        pos = torch.randn(3, 16)  # BREAKPOINT G03
        x = tok + pos  # BREAKPOINT G04
    """), encoding="utf-8")
    code, data = trace(script, tmp_path / "out")
    assert code == 0 and data["catalogue"] == "gpt" and len(data["snapshots"]) == 32
    g04 = next(s for s in data["snapshots"] if s["label"] == "G04")
    assert g04["check"]["passed"] is True


def test_the_summary_line_states_what_was_captured_and_checked(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the folder written, said as typed here (--out's default from mkdocs.yml is absolute)
    assert main(["trace", str(ENCODER_DECODER), "--out", str(tmp_path / "docs")]) == 0
    assert ("traced encoder_decoder_trace.py: captured 43 of 43 Encoder–decoder snapshots; checks: 26 passed, 0 failed, "
            "0 unrecognised, 17 not checkable; wrote docs/encoder-decoder-trace\n") in capsys.readouterr().out
    assert (tmp_path / "docs" / "encoder-decoder-trace" / "snapshots.json").is_file()  # the default name: the script's


@pytest.mark.parametrize("name", ["../up", "Has Space", "vit", "<b>x</b>", "index.md", "notes.md"])
def test_a_report_name_that_is_not_a_plain_folder_name_or_is_a_bundled_reports_is_refused(tmp_path, capsys, name):
    assert main(["trace", str(ENCODER_DECODER), "--out", str(tmp_path), "--name", name]) == 2
    assert "--name" in _error(capsys)
    assert not any(tmp_path.iterdir())  # refused before the script runs or anything is written


@pytest.mark.parametrize("flags", [["--hit", "0"], ["--timeout", "-1"], ["--report", "bert"]])
def test_bad_flags_are_refused_in_one_line(tmp_path, capsys, flags):
    with pytest.raises(SystemExit) as exited:
        main(["trace", str(ENCODER_DECODER), "--out", str(tmp_path), *flags])
    assert exited.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_a_missing_script_is_refused_in_one_line(tmp_path, capsys):
    assert main(["trace", str(tmp_path / "nope.py"), "--out", str(tmp_path / "out")]) == 2
    assert "there is no such script" in _error(capsys)


def test_a_script_that_raises_gets_the_report_of_what_was_captured_and_exit_2(tmp_path, capsys):
    script = variant(tmp_path, ENCODER_DECODER, "    logits = dec_final @ out_proj  # Snapshot #42",
                     "    raise ValueError('boom')\n    logits = dec_final @ out_proj  # Snapshot #42")
    code, data = trace(script, tmp_path / "out")
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "ValueError: boom" in err[-1]
    # python's own traceback of the script is shown (the tool is for debugging), without the tracer's frames
    assert err[0] == "Traceback (most recent call last):" and "raise ValueError('boom')" in "\n".join(err)
    assert not any("bootstrap.py" in line or "transformer_trace" in line for line in err[:-1])
    assert sum(s["captured"] for s in data["snapshots"]) == 41
    overview = (tmp_path / "out" / "t" / "index.md").read_text(encoding="utf-8")
    line = script.read_text(encoding="utf-8").splitlines().index("    raise ValueError('boom')") + 1
    assert "The script stopped with an error" in overview and escape_text(f"encoder_decoder_trace.py:{line}") in overview


def test_timeout_keeps_what_was_captured(tmp_path, capsys):
    script = tmp_path / "slow.py"
    script.write_text("import time\nsrc_ids = [1, 2]  # Snapshot #1\nwhile True:\n    try:\n        time.sleep(0.01)\n"
                      "    except Exception:\n        pass\n", encoding="utf-8")  # the script's own except cannot stop the timeout
    code, data = trace(script, tmp_path / "out", "--timeout", "1.5")
    assert code == 2 and "--timeout" in _error(capsys)
    assert data["snapshots"][0]["captured"] and data["outcome"]["timed_out"]


def test_the_script_gets_its_own_arguments_and_folder(tmp_path):
    (tmp_path / "helper.py").write_text("def width():\n    return 3\n", encoding="utf-8")
    script = tmp_path / "args.py"
    script.write_text("import os, sys\nimport helper\nsrc_ids = [len(sys.argv[1:]), helper.width(), int(__name__ == '__main__')]  # Snapshot #1\n"
                      "os.chdir('/')\n", encoding="utf-8")
    cwd, path = os.getcwd(), sys.path[:]
    code, data = trace(script, tmp_path / "out", "--", "--out", "x")
    assert code == 0 and data["snapshots"][0]["first"] == [2, 3, 1]
    assert os.getcwd() == cwd and sys.path == path  # the generator's own state is restored afterwards
    assert "helper" not in sys.modules  # a later trace of another folder's helper.py imports that one


def test_markers_count_in_the_modules_the_script_imports_not_in_other_scripts_beside_it(tmp_path):
    (tmp_path / "model.py").write_text("def embed(ids):\n    src_embed = [i * 2 for i in ids]  # Snapshot #4\n    return src_embed\n\n\n"
                                       "def positions(x):\n    return [v + 1 for v in x]  # Snapshot #5\n", encoding="utf-8")
    (tmp_path / "other_script.py").write_text("x = 1  # BREAKPOINT S01\n", encoding="utf-8")
    script = tmp_path / "main.py"
    script.write_text("from model import embed, positions\nsrc_ids = [1, 2, 3]  # Snapshot #1\nout = positions(embed(src_ids))\n",
                      encoding="utf-8")
    code, data = trace(script, tmp_path / "out")
    assert code == 0 and data["catalogue"] == "encoder-decoder"  # the ViT marker of the script beside it is not read
    embed = next(s for s in data["snapshots"] if s["label"] == "#4")
    assert embed["first"] == [2, 4, 6] and embed["source"]["path"] == "model.py"
    returned = next(s for s in data["snapshots"] if s["label"] == "#5")  # a marked return: the value it returns
    assert returned["first"] == [3, 5, 7] and returned["variable"] == "return_value"


def test_user_text_is_escaped_on_the_pages(tmp_path):
    folder = tmp_path / "a<b>`c"
    folder.mkdir()
    script = folder / "x.py"
    shutil.copy(ENCODER_DECODER, script)
    trace(script, tmp_path / "out")
    page = (tmp_path / "out" / "t" / "input" / "01-raw-input-tokens-ids.md").read_text(encoding="utf-8")
    assert "<b>" not in page


def test_the_warm_server_and_its_api_never_offer_trace(tmp_path):
    from transformer_trace.site.api import ApiError, build_request
    from transformer_trace.site.forms import SiteForms

    with pytest.raises(ApiError, match="argument --model: invalid choice: 'trace'"):  # every API request is a build
        build_request({"model": "trace"}, tmp_path, forms=SiteForms.of(REPORTS))


def traced_site(tmp_path: Path, script: Path = ENCODER_DECODER) -> Path:
    """The trace of ``script`` in a docs folder of its own, built by MkDocs with the project's plugin into tmp_path/site."""
    import subprocess

    docs = tmp_path / "docs"
    trace(script, docs)
    (docs / "index.md").write_text("# Home\n", encoding="utf-8")
    config = tmp_path / "mkdocs.yml"
    config.write_text(textwrap.dedent(f"""\
        site_name: traced
        docs_dir: {docs}
        site_dir: {tmp_path / "site"}
        theme: {{name: material}}
        plugins: {{transformer-trace: {{generate: false}}}}
        markdown_extensions: [admonition, attr_list, md_in_html, tables, pymdownx.details, pymdownx.superfences, pymdownx.highlight]
    """), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(config)], capture_output=True, text=True,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=300)
    assert result.returncode == 0, result.stderr
    return tmp_path / "site"


def test_the_trace_builds_into_a_site_with_the_plugins_navigation(tmp_path):
    traced_site(tmp_path)
    home = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "t/encoder/10-attention-scores-before-softmax/" in home  # the report's navigation, from its snapshots.json
    assert (tmp_path / "site" / "t" / "print" / "index.html").is_file()


@pytest.mark.parametrize("value, note", [
    ("torch.tensor([1 + 2j, 3j])", "complex tensor"),
    ("torch.empty(0, 3)", "empty tensor"),
    ("torch.eye(3).to_sparse()", "sparse tensor, shown dense"),
    ("torch.tensor([float('nan'), float('inf'), 1.0])", ""),
    ("torch.tensor(3.0)", ""),
    ("torch.tensor([True, False])", ""),
    ("torch.ones(3, requires_grad=True) * 2", ""),
])
def test_unusual_tensors_are_captured_or_said_to_be_unshowable_never_an_internal_error(tmp_path, value, note):
    script = tmp_path / "odd.py"
    script.write_text(f"import torch\nx = {value}  # trace: x\n", encoding="utf-8")
    code, data = trace(script, tmp_path / "out")
    assert code == 0 and len(data["snapshots"]) == 1
    page = (tmp_path / "out" / "t" / data["snapshots"][0]["page"]).read_text(encoding="utf-8")
    assert note in page


@pytest.mark.parametrize("ending, code", [("sys.exit(0)", 0), ("os._exit(0)", 0), ("sys.exit(3)", 2), ("os._exit(3)", 2)])
def test_a_script_that_exits_still_gets_its_report_and_exit_0_only_for_status_0(tmp_path, ending, code):
    script = tmp_path / "ends.py"
    script.write_text(f"import os, sys, torch\nx = torch.ones(3)  # trace: x\n{ending}\ny = 1\n", encoding="utf-8")
    status, data = trace(script, tmp_path / "out")
    assert status == code and data["snapshots"][0]["captured"]
    assert os._exit.__module__ == "posix"  # given back after the run


def test_a_process_the_script_starts_and_leaves_running_does_not_outlive_the_trace(tmp_path):
    pid_file = tmp_path / "child.pid"
    script = tmp_path / "spawns.py"
    script.write_text("import subprocess, sys, torch\n"
                      "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
                      f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
                      "x = torch.ones(3)  # trace: x\n", encoding="utf-8")
    code, data = trace(script, tmp_path / "out")
    assert code == 0 and data["snapshots"][0]["captured"]
    pid = int(pid_file.read_text())
    state = Path(f"/proc/{pid}/stat")
    assert not state.exists() or state.read_text().rsplit(")", 1)[1].split()[0] == "Z"


def test_a_trace_point_the_script_never_reaches_is_listed_as_not_captured(tmp_path):
    script = tmp_path / "unreached.py"
    script.write_text("import torch\ndef never_called():\n    z = torch.ones(2)  # trace: z\nx = torch.ones(3)  # trace: x\n",
                      encoding="utf-8")
    code, data = trace(script, tmp_path / "out")
    assert code == 0
    assert [(s["variable"], s["captured"]) for s in data["snapshots"]] == [("x", True), ("z", False)]


def test_a_marked_line_that_raised_and_was_caught_is_said_to_have_raised_not_to_be_skipped(tmp_path):
    script = tmp_path / "caught.py"
    script.write_text("import torch\nx = torch.ones(2)\ntry:\n    y = x @ torch.ones(3)  # trace: y\n"
                      "except RuntimeError:\n    pass\n", encoding="utf-8")
    code, data = trace(script, tmp_path / "out")
    assert code == 0 and not data["snapshots"][0]["captured"]
    [said] = data["outcome"]["warnings"]
    assert "line 4 ran but raised RuntimeError" in said and "never reached" not in said and "skipped" not in said


@pytest.mark.parametrize("ending", ["os.remove(__file__)", "open(__file__, 'w').write('')"])
def test_a_script_that_deletes_or_rewrites_itself_gets_the_report_of_the_code_that_ran(tmp_path, ending):
    script = tmp_path / "vanishes.py"
    script.write_text(f"import os, torch\nx = torch.ones(3)  # trace: x\n{ending}\n", encoding="utf-8")
    code, data = trace(script, tmp_path / "out")
    assert code == 0 and data["snapshots"][0]["captured"]
    assert "x = torch.ones(3)" in (tmp_path / "out" / "t" / data["snapshots"][0]["page"]).read_text(encoding="utf-8")


def test_a_keyboardinterrupt_the_script_raises_itself_is_a_script_failure_with_its_report(tmp_path, capsys):
    script = tmp_path / "interrupts.py"
    script.write_text("import torch\nx = torch.ones(3)  # trace: x\nraise KeyboardInterrupt\n", encoding="utf-8")
    code, data = trace(script, tmp_path / "out")
    assert code == 2 and data["snapshots"][0]["captured"]
    assert "KeyboardInterrupt" in capsys.readouterr().err and "interrupts.py:3" in data["outcome"]["error"]


def test_ctrl_c_during_the_trace_still_stops_it_without_a_report(tmp_path):
    import subprocess

    script = tmp_path / "waits.py"
    script.write_text("import time, torch\nx = torch.ones(3)  # trace: x\nprint('ready', flush=True)\ntime.sleep(30)\n", encoding="utf-8")
    child = subprocess.Popen([sys.executable, "-m", "transformer_trace", "trace", str(script), "--out", str(tmp_path / "out"), "-q"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=Path(__file__).parent.parent)
    assert child.stdout.readline().strip() == "ready"
    child.send_signal(2)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130 and "Traceback" not in err and not (tmp_path / "out" / "waits").exists()


def test_a_thread_the_script_leaves_running_is_waited_for_only_until_timeout(tmp_path):
    import subprocess

    script = tmp_path / "threads.py"
    script.write_text("import threading, time\n"  # no torch: its import in the script's own interpreter is part of --timeout
                      "def work():\n    y = [0, 0]  # trace: y\n    time.sleep(120)\n"
                      "threading.Thread(target=work).start()\nx = [1, 1, 1]  # trace: x\n", encoding="utf-8")
    started = __import__("time").monotonic()
    done = subprocess.run([sys.executable, "-m", "transformer_trace", "trace", str(script), "--out", str(tmp_path / "out"), "-q",
                           "--timeout", "2"], capture_output=True, text=True, timeout=90, cwd=Path(__file__).parent.parent)
    assert done.returncode == 2 and "--timeout" in done.stderr and "Traceback" not in done.stderr
    assert __import__("time").monotonic() - started < 60
    data = json.loads((tmp_path / "out" / "threads" / "snapshots.json").read_text(encoding="utf-8"))
    assert all(s["captured"] for s in data["snapshots"])


def test_timeout_holds_even_when_the_script_ignores_sigalrm(tmp_path, capsys):
    script = tmp_path / "stubborn.py"
    script.write_text("import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nx = [1, 1, 1]  # trace: x\n"
                      "while True:\n    pass\n", encoding="utf-8")
    code, data = trace(script, tmp_path / "out", "--timeout", "1")
    assert code == 2 and data["outcome"]["timed_out"] and data["snapshots"][0]["captured"]


def test_a_script_that_exits_with_a_message_says_the_message(tmp_path, capsys):
    script = tmp_path / "says.py"
    script.write_text("import sys, torch\nx = torch.ones(3)  # trace: x\nsys.exit('no data')\n", encoding="utf-8")
    code, data = trace(script, tmp_path / "out")
    assert code == 2 and data["outcome"]["error"] == "the script exited: no data"


@pytest.mark.parametrize("path, message", [("folder.py", "is a folder"), ("/dev/null", "is not a regular file")])
def test_a_script_that_is_not_a_file_is_refused_saying_what_it_is(tmp_path, capsys, path, message):
    (tmp_path / "folder.py").mkdir()
    assert main(["trace", str(tmp_path / path), "--out", str(tmp_path / "out")]) == 2
    assert message in _error(capsys) and not (tmp_path / "out").exists()


def test_a_script_that_sets_its_own_trace_function_is_captured_all_the_same(tmp_path):
    """A debugger, coverage or the script itself may own sys.settrace: the capture does not use it."""
    script = tmp_path / "own_trace.py"
    script.write_text("import sys, torch\nevents = []\nsys.settrace(lambda frame, event, arg: events.append(event))\n"
                      "x = torch.ones(3)  # trace: x\nsys.settrace(None)\ny = torch.ones(2)  # trace: y\n"
                      "assert events, 'the script\\'s own trace function was called'\n", encoding="utf-8")
    code, data = trace(script, tmp_path / "out")
    assert code == 0 and data["outcome"]["finished"], data["outcome"]
    assert [s["captured"] for s in data["snapshots"]] == [True, True]
    assert not data["outcome"]["warnings"]


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")
def test_a_traced_scripts_print_view_is_printed_to_pdf_by_the_bundled_reports_export(tmp_path):
    import re

    from pypdf import PdfReader

    from transformer_trace.pdf import print_reports, traced_reports

    site = traced_site(tmp_path)
    assert traced_reports(tmp_path / "docs") == ["t"]  # what `python -m transformer_trace pdf` (and trace --pdf) prints
    [pdf] = print_reports(site, tmp_path / "pdf", ["t"])
    text = re.sub(r"\s+", " ", "\n".join(page.extract_text() for page in PdfReader(pdf).pages))
    assert "Trace of encoder_decoder_trace.py: the full report" in text
    assert "#10 · Attention scores before softmax" in text and "Guiding questions" in text and "Script SHA-256" in text


# ----------------------------------------------------------------------------- the bundled reports' words, the user's numbers


def explanation_of(page: str) -> str:
    return page.split("## What it is", 1)[1].split("\n## ", 1)[0]


def test_a_snapshot_page_carries_the_bundled_explanation_written_with_the_users_numbers(tmp_path):
    import numpy

    from transformer_trace.tensors import fmt

    trace(ENCODER_DECODER, tmp_path)
    page = (tmp_path / "t" / "decoder" / "26-masked-attention-scores-after-mask-softmax.md").read_text(encoding="utf-8")
    text = explanation_of(page)
    assert "each row is a distribution over the allowed keys only" in text  # encoder_decoder/templates/explain.md.j2, block s26
    probs = numpy.load(tmp_path / "t" / "data" / "26_attn_weights_m.npy")  # what the script computed
    last_row = ", ".join(fmt(float(v)) for v in probs[0, 0, -1])
    assert f"The last row may attend to all {probs.shape[-1]}: {last_row}." in text
    assert "report's own explanation" not in text  # not the fallback


def test_a_question_page_carries_the_written_answers_with_the_users_numbers(tmp_path):
    _, data = trace(ENCODER_DECODER, tmp_path)
    questions = (tmp_path / "t" / "questions.md").read_text(encoding="utf-8")
    dims = data["dims"]
    assert f"Entry (i, j) of a head's matrix is how well query i matches key j, scaled by 1/√{dims['hs']}" in questions
    assert f"S × S = {dims['S']} × {dims['S']}" in questions and f"T × S = {dims['T']} × {dims['S']}" in questions
    blocked = next(s for s in data["snapshots"] if s["label"] == "#25")["stats"]["inf"]
    assert f"({int(blocked)} blocked entries)" in questions  # read from the user's mask
    assert "has no written answer" not in questions


@pytest.mark.parametrize("mask, apply", [
    ("torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)[None, None]", "scores_pre_mask_m.masked_fill(tgt_mask, float(\"-inf\"))"),
    ("torch.triu(torch.full((T, T), -1e9), diagonal=1)[None, None]", "scores_pre_mask_m + tgt_mask"),
])
def test_a_mask_in_another_form_passes_its_check_and_gets_no_text_that_describes_zeros_and_infinities(tmp_path, mask, apply):
    script = variant(tmp_path, ENCODER_DECODER, 'torch.triu(torch.full((T, T), float("-inf")), diagonal=1)[None, None]', mask)
    script.write_text(script.read_text(encoding="utf-8").replace("scores_pre_mask_m + tgt_mask", apply), encoding="utf-8")
    _, data = trace(script, tmp_path / "out")
    assert next(s for s in data["snapshots"] if s["label"] == "#25")["check"]["passed"] is True
    text = explanation_of((tmp_path / "out" / "t" / "decoder" / "25-mask-tensor.md").read_text(encoding="utf-8"))
    assert "0 blocked entries" not in text and "−∞ where it may not" not in text
    assert "needs a mask of 0 and −∞" in text.replace("&#45;", "-")
    assert "here T = 6 (target length (tokens))." in text  # the bound names only: no "1 = 1" for the broadcast axes
    questions = (tmp_path / "out" / "t" / "questions.md").read_text(encoding="utf-8")
    assert "(0 blocked entries)" not in questions and "(0 entries in this run)" not in questions


@pytest.mark.parametrize("mask", ["torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)[None, None]",  # True = blocked
                                  "torch.tril(torch.ones(T, T, dtype=torch.bool))[None, None]",  # True = allowed
                                  "torch.triu(torch.full((T, T), -1e9), diagonal=1)[None, None]"])
def test_the_mask_figure_draws_what_the_users_mask_allows_in_any_form(tmp_path, monkeypatch, mask):
    import transformer_trace.raster as raster

    drawn: list[str] = []
    text = raster.Canvas.text
    monkeypatch.setattr(raster.Canvas, "text", lambda self, x, y, s, *a, **k: (drawn.append(s), text(self, x, y, s, *a, **k))[1])
    script = variant(tmp_path, ENCODER_DECODER, 'torch.triu(torch.full((T, T), float("-inf")), diagonal=1)[None, None]', mask)
    script.write_text(script.read_text(encoding="utf-8").replace(
        "scores_pre_mask_m + tgt_mask", "scores_pre_mask_m.masked_fill(~tgt_mask, float('-inf'))" if "tril" in mask else
        "scores_pre_mask_m.masked_fill(tgt_mask, float('-inf'))" if "bool" in mask else "scores_pre_mask_m + tgt_mask"), encoding="utf-8")
    trace(script, tmp_path / "out")
    assert "21 allowed (white), 15 blocked (grey) of 6×6" in drawn  # the target has 6 words: 21 on and below the diagonal
    page = (tmp_path / "out" / "t" / "decoder" / "25-mask-tensor.md").read_text(encoding="utf-8")
    assert escape_text("allowed in white, blocked in grey") in page and "(0)" not in page  # the caption names no form


def test_a_block_that_needs_what_the_trace_lacks_falls_back_and_names_it(tmp_path):
    trace(ENCODER_DECODER, tmp_path)
    page = (tmp_path / "t" / "input" / "01-raw-input-tokens-ids.md").read_text(encoding="utf-8")
    text = explanation_of(page)
    assert f"needs {escape_text('input src')}" in text  # block s1 quotes the source sentence: a trace has its token IDs only
    assert "holds 7 values of shape `(7,)`" in text and "The values range from" in text  # generic text, with the user's numbers


def test_blocks_that_name_the_words_read_the_users_token_ids_instead(tmp_path):
    _, data = trace(ENCODER_DECODER, tmp_path)
    first_id = int(next(s for s in data["snapshots"] if s["label"] == "#1")["first"][0])
    page = (tmp_path / "t" / "encoder" / "07-self-attention-queries-q.md").read_text(encoding="utf-8")
    assert f"Position 0 (“ID {first_id}”) gets" in explanation_of(page)  # block s7, the word replaced by the user's ID
    assert "untrained" not in (tmp_path / "t" / "encoder" / "11-attention-scores-after-softmax.md").read_text(encoding="utf-8")


def test_an_answer_that_needs_a_snapshot_not_captured_says_which_and_how_to_mark_it(tmp_path):
    script = variant(tmp_path, ENCODER_DECODER, "# Snapshot #25", "")
    _, data = trace(script, tmp_path / "out")
    assert next(s for s in data["snapshots"] if s["label"] == "#25")["captured"] is False
    questions = (tmp_path / "out" / "t" / "questions.md").read_text(encoding="utf-8")
    q4 = questions.split("{ #q4 }", 1)[1].split("\n## ", 1)[0]
    assert f"needs {escape_text('snapshot #25 (not captured; mark it with # Snapshot #25)')}" in q4
    assert "(1, 4, 6, 6)" in q4  # what the run shows instead: #26's shape
    page = (tmp_path / "out" / "t" / "decoder" / "25-mask-tensor.md").read_text(encoding="utf-8")
    assert "Not captured" in page and "# Snapshot #25" in page


def test_a_comparison_the_explanation_makes_follows_the_users_numbers(tmp_path):
    script = variant(tmp_path, VIT, '    ff_out = linear(ff_hidden, p["fc2"])', "    ff_out = -0.9 * x_after_attn  # a sublayer that shrinks the stream")
    _, data = trace(script, tmp_path / "out")
    assert next(s for s in data["snapshots"] if s["label"] == "S19")["check"]["passed"] is True  # still the residual sum
    text = explanation_of((tmp_path / "out" / "t" / "block" / "19-residual-norm-post-mlp.md").read_text(encoding="utf-8"))
    assert "down from" in text and "up from" not in text and "each block adds to the stream" not in text


def test_texts_of_a_run_whose_softmax_saturates_claim_nothing_its_numbers_contradict(tmp_path):
    script = variant(tmp_path, ENCODER_DECODER, '    q = enc_in @ p["sa_W_q"]  # Snapshot #7', '    q = 20 * enc_in @ p["sa_W_q"]  # Snapshot #7')
    script.write_text(script.read_text(encoding="utf-8").replace('q_m = x @ p["sa_W_q"]', 'q_m = 20 * x @ p["sa_W_q"]'), encoding="utf-8")
    _, data = trace(script, tmp_path / "out")
    assert all(s["check"]["passed"] is not False for s in data["snapshots"])  # a sharp softmax is no bug
    out = tmp_path / "out" / "t"
    scores = explanation_of((out / "encoder" / "10-attention-scores-before-softmax.md").read_text(encoding="utf-8"))
    assert "does not saturate" not in scores
    weights = explanation_of((out / "decoder" / "26-masked-attention-scores-after-mask-softmax.md").read_text(encoding="utf-8"))
    assert "spreads over all" not in weights
    block_input = explanation_of((out / "encoder" / "06-encoder-block-input-tensor.md").read_text(encoding="utf-8"))
    assert "#5.Every" not in block_input and "For layer 1 this is exactly the position-encoded embedding of #5." in block_input


def test_a_failing_snapshot_does_not_get_the_explanation_of_a_correct_one(tmp_path):
    old, new, _ = ED_BUGS["mask lets a position see the future"]
    trace(variant(tmp_path, ENCODER_DECODER, old, new), tmp_path / "out")
    page = (tmp_path / "out" / "t" / "decoder" / "26-masked-attention-scores-after-mask-softmax.md").read_text(encoding="utf-8")
    text = explanation_of(page)
    assert "Every entry above the diagonal is exactly 0" not in text and "failed its check" in text


def test_bundled_and_traced_pages_come_from_one_set_of_templates_without_the_others_sections(tmp_path, ed_run):
    from transformer_trace.reports import REPORTS
    from transformer_trace.render import render_report

    bundled = tmp_path / "bundled"
    render_report(REPORTS["encoder-decoder"], ed_run, bundled)
    trace(ENCODER_DECODER, tmp_path / "traced")
    traced = tmp_path / "traced" / "t"
    trace_only = ["Your variable", "Marked at", "Hit shown", "Not captured", "bound from your tensors", "Script SHA-256", "this trace"]
    bundled_only = ["| Weights |", "## Configuration", "## Parameters", "Recorded as", "How this differs from the seed report"]
    for name in ("index.md", "questions.md", "print.md", "encoder/10-attention-scores-before-softmax.md", "encoder/index.md"):
        ours, theirs = (bundled / name).read_text(encoding="utf-8"), (traced / name).read_text(encoding="utf-8")
        assert not [s for s in trace_only if s in ours], name
        assert not [s for s in bundled_only if s in theirs], name
    assert "Marked at" in (traced / "encoder/10-attention-scores-before-softmax.md").read_text(encoding="utf-8")
    assert "Recorded as" in (bundled / "encoder/10-attention-scores-before-softmax.md").read_text(encoding="utf-8")
    assert not (Path(__import__("transformer_trace").__file__).parent / "templates" / "trace").exists()  # no templates of its own


def test_the_traced_run_answers_like_a_model_run_and_names_what_a_trace_lacks(tmp_path, monkeypatch):
    import transformer_trace.trace.report as report
    from transformer_trace.run import ModelRun
    from transformer_trace.sources import MissingTensor, NotCheckable

    seen = {}
    write_pages = report.write_pages
    monkeypatch.setattr(report, "write_pages", lambda catalogue, run, pages, out, **given: (
        seen.update(run=run), write_pages(catalogue, run, pages, out, **given))[1])
    trace(ENCODER_DECODER, tmp_path)
    run = seen["run"]
    # the run object a bundled report produces, without a model (a TracedRun: its marked lines' calls stand for one)
    assert isinstance(run, ModelRun) and run.model is None
    assert run.tensor_view("src_ids").shape == (1, 7)  # (B, S): the catalogue's layout, as a model run records it
    assert run.source("{enc}.self_attn.scores") == ("encoder_decoder_trace.py", 83)  # the user's marked line
    assert run.stamp()["sha256"] == __import__("hashlib").sha256(ENCODER_DECODER.read_bytes()).hexdigest() and run.seed == 7
    with pytest.raises(MissingTensor, match="no snapshot of the catalogue shows it"):
        run.cpu("{enc}.residual_1")
    with pytest.raises(NotCheckable, match="not the model's weights"):
        run.parameter("src_emb.weight")
    with pytest.raises(NotCheckable, match="input src"):
        run.input("src")
    assert run.inputs["src_tokens"][0] == f"ID {int(run.cpu('src_ids')[0, 0])}"


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")
def test_pdf_with_a_configuration_for_another_docs_folder_is_refused_before_the_script_runs(tmp_path, capsys):
    config = tmp_path / "mkdocs.yml"
    config.write_text(f"site_name: other\ndocs_dir: {tmp_path / 'elsewhere'}\n", encoding="utf-8")
    code, data = trace(ENCODER_DECODER, tmp_path / "out", "--pdf", "--config", str(config))
    assert code == 2 and data == {} and not (tmp_path / "out").exists()
    assert "is not a usable MkDocs configuration" in capsys.readouterr().err  # its docs_dir does not exist: one line, no traceback
    (tmp_path / "elsewhere").mkdir()
    code, data = trace(ENCODER_DECODER, tmp_path / "out", "--pdf", "--config", str(config))
    assert code == 2 and data == {} and not (tmp_path / "out").exists()
    assert "the PDFs would print another site" in capsys.readouterr().err


def test_the_encoder_decoders_record_points_listed_on_the_cpu_equal_the_meta_device_ones_and_leave_the_random_state():
    """A trace lists the catalogue's record points; the default encoder–decoder is built on the CPU for that (on the meta
    device PyTorch's first operation would import torch._dynamo), which must change neither the list nor torch's RNG."""
    import torch

    from transformer_trace.options import RunOptions
    from transformer_trace.reports import REPORTS

    options = REPORTS["encoder-decoder"].options()
    torch.manual_seed(123)
    state = torch.random.get_rng_state()
    on_cpu = options.record_points()
    assert torch.equal(torch.random.get_rng_state(), state)
    on_meta = RunOptions.record_points(options)
    assert list(on_cpu) == list(on_meta)
    assert [d.shape for d in on_cpu.values()] == [d.shape for d in on_meta.values()]
