"""The toy ViT of seed 004: a real post-norm encoder layer, the seed's numbers reproduced where they are right and every
disagreement detected, told apart (slip, carried, method) and shown on its page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from torch import nn

from transformer_trace.cli import main
from transformer_trace.reports import REPORTS
from transformer_trace.render import escape_text
from transformer_trace.reports.toy_vit import seed
from transformer_trace.models.recording import recording
from transformer_trace.models.toy_vit import ToyViTConfig, ToyVisionTransformer

KEY = "toy-vit"


@pytest.fixture(scope="module")
def run(runs):
    return runs[KEY]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The toy report alone, built by the CLI with its defaults."""
    docs = tmp_path_factory.mktemp("toy") / "docs"
    assert main(["build", "--model", KEY, "--out", str(docs), "--device", "cpu", "-q"]) == 0
    return docs / KEY


def page_of(built: Path, run, entry: str) -> str:
    return (built / run.inputs["seed_pages"][entry]["path"]).read_text(encoding="utf-8")


# ----------------------------------------------------------------------------- the model


def test_the_encoder_layer_is_torch_nn_post_norm_layer_with_the_same_weights():
    """Our block against nn.TransformerEncoderLayer (post-norm, ReLU, one head) with random weights in both."""
    cfg = ToyViTConfig()
    torch.manual_seed(3)
    model = ToyVisionTransformer(cfg).eval()
    for p in model.parameters():
        nn.init.normal_(p, std=0.5)
    block = model.blocks[0]
    reference = nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, cfg.mlp_dim, dropout=0.0, activation="relu",
                                           layer_norm_eps=cfg.layer_norm_eps, batch_first=True, norm_first=False).eval()
    attn = block.attn
    state = {
        "self_attn.in_proj_weight": torch.cat([attn.query.weight, attn.key.weight, attn.value.weight]),
        "self_attn.in_proj_bias": torch.cat([attn.query.bias, attn.key.bias, attn.value.bias]),
        "self_attn.out_proj.weight": attn.proj.weight, "self_attn.out_proj.bias": attn.proj.bias,
        "linear1.weight": block.mlp.fc1.weight, "linear1.bias": block.mlp.fc1.bias,
        "linear2.weight": block.mlp.fc2.weight, "linear2.bias": block.mlp.fc2.bias,
        "norm1.weight": block.ln_1.weight, "norm1.bias": block.ln_1.bias, "norm2.weight": block.ln_2.weight, "norm2.bias": block.ln_2.bias,
    }
    reference.load_state_dict(state)
    x = torch.randn(2, cfg.n_patches + 1, cfg.d_model)
    with torch.no_grad():
        assert (block(x) - reference(x)).abs().max() <= 1e-5


def test_the_seed_weights_load_and_patch_embedding_is_flat_times_e():
    cfg = ToyViTConfig()
    model = ToyVisionTransformer(cfg)
    model.load_state_dict(seed.state_dict(cfg))
    with torch.no_grad(), recording() as rec:
        model(seed.image())
    flat = rec.tensor("patch_embed.flat")[0].double()
    assert torch.allclose(rec.tensor("patch_embed.embed")[0].double(), flat @ seed.matrix("E_matrix"), atol=1e-6)
    assert torch.equal(model.blocks[0].attn.query.weight, torch.eye(cfg.d_model))  # the seed's Q₅ = x⁰₅


# ----------------------------------------------------------------------------- the seed's numbers


def test_the_seeds_nine_flattened_patches_are_reproduced_exactly(run):
    flat = run.cpu("patch_embed.flat")[0]  # float32, as the model computed it
    printed = seed.matrix("flat").float()  # the seed's table, lines 193-201
    assert torch.equal(flat, printed)
    assert [r.verdict for r in run.inputs["seed_comparison"]["flat"].rows] == ["agrees"] * 9
    assert [r.verdict for r in run.inputs["seed_comparison"]["patches"].rows] == ["agrees"] * 9


def test_recomputing_patch_times_e_only_a_and_e_match_the_seeds_table():
    """Independently of the model: the seed's own flattened patches times its own E, against its projected table."""
    recomputed = seed.matrix("flat") @ seed.matrix("E_matrix")
    rows = seed.printed()["embed"]
    matching = [p.item for p, mine in zip(rows, recomputed) if bool(((mine - p.values).abs() <= 0.005 + 1e-9).all())]
    assert matching == ["A", "E"]


def test_the_report_finds_the_same_seven_projection_slips_and_no_loose_tolerance_hides_them(run):
    embed = run.inputs["seed_comparison"]["embed"]
    verdicts = {r.printed.item: r.verdict for r in embed.rows}
    assert verdicts == {"A": "agrees", "E": "agrees", **{p: "slip" for p in "BCDFGHI"}}
    # Each disagreeing row misses the seed's rounding (half a unit of its last digit) by a clear margin, not by float noise.
    for row in embed.rows:
        if row.verdict != "agrees":
            worst = max(abs(o - float(t)) for o, t in zip(row.ours, row.printed.text))
            assert worst >= 0.01, (row.printed.item, worst)
    # Patch I: two of its four numbers agree, and the row still counts as a disagreement.
    row_i = next(r for r in embed.rows if r.printed.item == "I")
    assert row_i.agree == (False, True, True, False) and not row_i.agrees


def test_a_slip_is_told_apart_from_a_carried_difference_and_a_different_method(run):
    comparison = run.inputs["seed_comparison"]
    verdict = {(entry, r.printed.item): r.verdict for entry, c in comparison.items() for r in c.rows}
    assert verdict["embed", "B"] == "slip"  # 0.3·0.2 + 0.4·0.0 + 0.4·0.1 + 0.3·0.3 = 0.19, printed 0.24
    assert verdict["x0", "B"] == "carried"  # the seed adds B's position correctly to its wrong embedding
    assert verdict["dots", "E·B"] == "carried" and verdict["dots", "E·A"] == "slip"
    assert verdict["probs", "E→[CLS]"] == "slip"  # the seed's ten weights add up to 0.90
    assert verdict["logits", "[CLS]"] == "method"  # its head reads an imagined layer-12 [CLS]
    assert sum(float(r.printed.text[0]) for r in comparison["probs"].rows) == pytest.approx(0.90)


def test_the_seeds_inputs_are_loaded_as_printed(run, built):
    given = run.inputs["seed_given"]
    assert set(given) == {"image", "E_matrix", "cls_token", "pos", "W1", "b1", "W2", "b2", "W_cls", "b_cls"}
    assert all(g.same for g in given.values())
    for g in given.values():
        page = next(built.glob(f"*/{next(s.number for s in REPORTS[KEY].snapshots if run.name(s.main) == run.name(g.page)):02d}-*.md"))
        assert f": {g.what}** — loaded as printed." in page.read_text(encoding="utf-8"), g.entry


def test_a_changed_printed_value_is_detected(run, tmp_path, monkeypatch):
    """The comparison reads the table: corrupt one printed digit of a row that agrees and it no longer agrees."""
    table = seed.TABLE.read_text(encoding="utf-8").replace("flat,A,193,0.1 0.2 0.6 0.5", "flat,A,193,0.1 0.2 0.6 0.6")
    monkeypatch.setattr(seed, "TABLE", tmp_path / "seed.csv")
    seed.TABLE.write_text(table, encoding="utf-8")
    seed.printed.cache_clear()
    try:
        rows = seed.compare(run)["flat"].rows
        assert [r.printed.item for r in rows if not r.agrees] == ["A"] and rows[0].verdict == "slip"
    finally:
        seed.printed.cache_clear()


# ----------------------------------------------------------------------------- the pages


def test_every_disagreement_is_on_its_page_with_the_seeds_value_and_the_verdict(run, built):
    comparison = run.inputs["seed_comparison"]
    for entry, c in comparison.items():
        page = page_of(built, run, entry)
        assert f"{c.agreeing} of {len(c.rows)} printed row" in page, entry
        for row in c.rows:
            cells = ", ".join(t if ok else f"**{t}**" for t, ok in zip(row.printed.text, row.agree))
            start = f"| {escape_text(row.printed.item)} | {row.printed.line} | {cells} |"
            line = next((ln for ln in page.splitlines() if ln.startswith(start)), None)
            assert line is not None, (entry, row.printed.item)
            assert ", ".join(row.ours_rounded) in line
            assert {"agrees": "agrees", "slip": "**slip**", "carried": "**carried**", "method": "**method**"}[row.verdict] in line


def test_the_overview_counts_agreements_and_disagreements(run, built):
    rows = [r for c in run.inputs["seed_comparison"].values() for r in c.rows]
    agreeing = sum(r.agrees for r in rows)
    overview = (built / "index.md").read_text(encoding="utf-8")
    assert f"**{agreeing} agree, {len(rows) - agreeing} disagree**" in overview
    for verdict in ("slip", "carried", "method"):
        assert f"**{sum(r.verdict == verdict for r in rows)}**" in overview.split("| **all** |")[1].splitlines()[0]


def test_every_value_of_every_tensor_is_on_its_page(run, built):
    for snap in REPORTS[KEY].snapshots:
        page = next(built.glob(f"*/{snap.number:02d}-*.md")).read_text(encoding="utf-8")
        values = page.split("## Values", 1)[1].split("| min |", 1)[0]
        assert "..." not in values
        shown = [float(v) for v in re.findall(r"-?\d+\.\d{4}", values)]
        assert shown == pytest.approx(run.cpu(snap.main).flatten().tolist(), abs=5e-5), snap.number


def test_the_explorer_lays_attention_over_the_three_by_three_patch_grid(built):
    import json

    index = json.loads((built / "data" / "index.json").read_text(encoding="utf-8"))
    group = index["attention"][0]
    assert group["image"] == {"file": "data/input.png", "grid": 3, "cls": True}
    assert index["labels"]["tokens"] == ["[CLS]", *"ABCDEFGHI"]


# ----------------------------------------------------------------------------- other inputs


def test_other_pixels_and_random_weights_build_and_still_compare(tmp_path):
    pixels = " ".join(["0.5"] * 36)
    assert main(["build", "--model", KEY, "--out", str(tmp_path / "docs"), "--device", "cpu", "-q", "--pixels", pixels,
                 "--weights", "random"]) == 0
    overview = (tmp_path / "docs" / KEY / "index.md").read_text(encoding="utf-8")
    assert "a 6×6 image given with &#45;&#45;pixels" in overview and "Every weight the seed prints" not in overview
    cls_page = next((tmp_path / "docs" / KEY).glob("*/05-*.md")).read_text(encoding="utf-8")
    assert "**The seed's input, line 280: the [CLS] token** — this run holds other values" in cls_page


@pytest.mark.parametrize("pixels, message", [
    ("0.1 0.2", "--pixels takes 36 numbers"),
    (" ".join(["0.1"] * 35 + ["x"]), "'x' is not a number"),
    (" ".join(["0.1"] * 35 + ["1.5"]), "between 0 (black) and 1 (white)"),
    (" ".join(["0.1"] * 35 + ["nan"]), "between 0 (black) and 1 (white)"),
])
def test_bad_pixels_are_a_one_line_error(pixels, message, tmp_path, capsys):
    assert main(["build", "--model", KEY, "--out", str(tmp_path / "docs"), "--pixels", pixels]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not (tmp_path / "docs").exists()


def test_weights_of_another_report_are_refused(tmp_path, capsys):
    assert main(["build", "--model", KEY, "--out", str(tmp_path / "docs"), "--weights", "imagenet"]) == 2
    err = capsys.readouterr().err
    assert "is not one of the toy ViT's: seed, random" in err and err.count("\n") == 1 and not (tmp_path / "docs").exists()
