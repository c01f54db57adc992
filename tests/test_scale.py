"""Model sizes are configuration: the presets and larger encoder-decoders generate valid reports."""

from __future__ import annotations

import json

import pytest

from transformer_trace.cli import main
from transformer_trace.reports import REPORTS
from transformer_trace.tensor_data import exploration_names
from tests.conftest import run_report


def build_and_load(tmp_path, *args: str) -> dict:
    docs = tmp_path / "docs"
    assert main(["build", "--out", str(docs), "--device", "cpu", "-q", *args]) == 0
    key = "vit" if "vit" in args else "encoder-decoder"
    return json.loads((docs / key / "snapshots.json").read_text(encoding="utf-8"))


def shapes(data: dict) -> dict[int, list[int]]:
    return {s["number"]: s["shape"] for s in data["snapshots"]}


@pytest.mark.parametrize("size, image, tokens, heads, classes", [
    ("tiny", 32, 65, 3, 10),     # seed 003's ViT-Tiny on CIFAR-sized images
    ("b16-384", 384, 577, 12, 1000),
    ("l16", 224, 197, 16, 1000),
])
def test_vit_presets_generate_valid_reports(tmp_path, size, image, tokens, heads, classes):
    data = build_and_load(tmp_path, "--model", "vit", "--vit-size", size)
    got = shapes(data)
    assert got[1] == [1, 3, image, image]
    assert got[13] == [1, heads, tokens, tokens]
    assert got[26] == [1, classes]
    assert all(s["check"]["passed"] for s in data["snapshots"]), [s["check"] for s in data["snapshots"] if not s["check"]["passed"]]
    assert len(data["snapshots"]) == 26


def test_a_deeper_encoder_decoder_and_a_long_sentence(tmp_path):
    src = " ".join(f"word{i}" for i in range(40))
    data = build_and_load(tmp_path, "--model", "encoder-decoder", "--layers", "6", "--layer", "4", "--src", src, "--tgt", "short target here")
    got = shapes(data)
    assert got[4] == [1, 40, 128] and got[10] == [1, 4, 40, 40] and got[33] == [1, 4, 3, 40]
    assert all(s["check"]["passed"] for s in data["snapshots"])


def test_only_what_pages_figures_and_the_explorer_need_is_kept():
    vit = REPORTS["vit"]
    run = run_report("vit", size="l16")
    names = set(run.recording)
    assert names == {n.format(**run.places) for n in vit.record_names()} | set(exploration_names(vit, run.inputs["config"]))
    # Untraced blocks leave only what the explorer shows: their attention and their output.
    assert {n for n in names if n.startswith("blocks.5.")} == {"blocks.5.attn.probs", "blocks.5.output"}
    kept = sum(r.tensor.numel() * r.tensor.element_size() for r in run.recording.values())
    assert kept < 150e6  # bytes; recording every block of ViT-L/16 would keep over 1 GB


def test_any_width_that_heads_divide_works():
    run = run_report("encoder-decoder", d_model=96, heads=6, d_ff=64)
    assert run.t("{enc}.self_attn.q_heads").shape == (1, 6, 6, 16)
