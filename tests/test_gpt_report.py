"""The GPT report: builds from any prompt with every check passing, shows bytes honestly, proves prefix invariance."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from PIL import Image

from transformer_trace.cli import main
from transformer_trace.reports import REPORTS
from transformer_trace.models.gpt import encode
from tests.conftest import run_report

GPT = REPORTS["gpt"]
NON_ASCII = "Ça coûte 5€ <b>*ok*</b> 中 🙂"  # 2-, 3- and 4-byte characters, and Markdown/HTML specials
BUILDS = {
    "non-ascii": ["--prompt", NON_ASCII],
    "sizes": ["--prompt", "The cat sat.", "--layers", "3", "--d-model", "64", "--heads", "2", "--layer", "3", "--generate", "5",
              "--weights", "random"],
}


def build(tmp_path_factory, name: str) -> Path:
    docs = tmp_path_factory.mktemp(f"gpt-{name}") / "docs"
    assert main(["build", "--model", "gpt", "--out", str(docs), "--device", "cpu", "-q", *BUILDS[name]]) == 0
    return docs / "gpt"


@pytest.fixture(scope="module")
def non_ascii(tmp_path_factory) -> Path:
    return build(tmp_path_factory, "non-ascii")


@pytest.fixture(scope="module")
def sized(tmp_path_factory) -> Path:
    return build(tmp_path_factory, "sizes")


def snapshots(folder: Path) -> dict:
    return json.loads((folder / "snapshots.json").read_text(encoding="utf-8"))


def page(folder: Path, number: int) -> str:
    return next(folder.glob(f"*/{number:02d}-*.md")).read_text(encoding="utf-8")


@pytest.mark.parametrize("fixture", ["non_ascii", "sized"])
def test_every_check_passes_and_every_shape_matches(fixture, request):
    folder = request.getfixturevalue(fixture)
    data = snapshots(folder)
    assert len(data["snapshots"]) == len(GPT.snapshots) >= 30
    failed = [(s["label"], s["check"]["detail"]) for s in data["snapshots"] if not s["check"]["passed"]]
    assert failed == []
    dims = data["dims"]
    assert dims["S"] == dims["T"] + dims["N"] - 1
    for snap in GPT.snapshots:
        assert "matches" in page(folder, snap.number), snap.number


@pytest.mark.parametrize("fixture, weights", [("non_ascii", "trained: the bundled checkpoint gpt"), ("sized", "random (seeded with 7")])
def test_pages_and_run_stamp_name_the_weights_and_the_training_page_checks_out(fixture, weights, request):
    folder = request.getfixturevalue(fixture)
    data = snapshots(folder)
    assert [p["page"] for p in data["extra_pages"]] == ["training.md"] and data["extra_pages"][0]["check"]["passed"]
    training = (folder / "training.md").read_text(encoding="utf-8")
    escaped = weights.replace(":", "&#58;").replace("-", "&#45;").replace("(", "&#40;")
    for path in (folder / "index.md", folder / "training.md", folder / "block" / next((folder / "block").glob("14-*")).name):
        assert escaped in path.read_text(encoding="utf-8"), path
    assert "| **this model, these weights** |" in training and (folder / "figures" / "training_curve.png").is_file()
    # the overview states the same measured number as the training page
    bits = re.search(r"\| \*\*this model, these weights\*\* \| \*\*([\d.]+)\*\* \|", training)[1]
    assert bits in (folder / "index.md").read_text(encoding="utf-8")


def test_the_attention_page_names_the_previous_token_head_and_the_explorer_opens_on_it(non_ascii):
    block, head = re.search(r"most like a \*\*previous-token head\*\* is \*\*block (\d+), head (\d+)\*\*", page(non_ascii, 14)).groups()
    assert f'data-layer="{int(block) - 1}" data-head="{int(head) - 1}"' in page(non_ascii, 14)
    assert f"**block {block}, head {head}** (★)" in (non_ascii / "training.md").read_text(encoding="utf-8")


def test_options_reach_the_model(sized):
    data = snapshots(sized)
    assert data["dims"] | {"C": 64, "h": 2, "L": 3, "N": 5, "T": 12} == data["dims"]
    tensors = {t["name"] for s in data["snapshots"] for t in s["tensors"]}
    assert "blocks.2.attn.q" in tensors and "generate.blocks.2.cache_k" in tensors  # --layer 3 traces the third block
    assert next(s for s in data["snapshots"] if s["number"] == 29)["shape"] == [1, 2, 16, 32]


def test_non_ascii_prompt_shows_every_byte(non_ascii):
    data = snapshots(non_ascii)
    assert data["inputs"]["prompt"] == NON_ASCII
    assert data["dims"]["T"] == len(encode(NON_ASCII)) > len(NON_ASCII)
    first = page(non_ascii, 1)
    for labels in ("0xC3 0x87", "0xE2 0x82 0xAC", "0xE4 0xB8 0xAD", "0xF0 0x9F 0x99 0x82"):  # Ç € 中 🙂
        assert labels in first
    assert "0xC3 → **195**" in first
    overview = (non_ascii / "index.md").read_text(encoding="utf-8")
    assert "0xF0 0x9F 0x99 0x82" in overview and "“🙂” = 0xF0 0x9F 0x99 0x82" in overview
    assert (non_ascii / "figures" / "bytes.png").read_bytes()[:4] == b"\x89PNG"


def test_user_text_is_escaped_on_every_page(non_ascii):
    """Outside code blocks user text is entity-escaped; inside one (the rerun command) Markdown shows it literally."""
    for path in non_ascii.rglob("*.md"):
        text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
        assert "<b>" not in text and "*ok*" not in text, path
    assert "&#60;b&#62;&#42;ok&#42;&#60;/b&#62;" in (non_ascii / "index.md").read_text(encoding="utf-8")


def test_the_mask_page_shows_that_earlier_positions_ignore_the_last_byte(non_ascii):
    mask_page = page(non_ascii, 12)
    found = re.search(r"maximum absolute difference of \*\*([-+.e\d]+)\*\*", mask_page)
    assert found, "the mask page does not state the prefix-invariance difference"
    assert float(found[1]) <= 1e-6
    inputs = snapshots(non_ascii)["inputs"]
    assert inputs["prefix_change"] <= 1e-6 and inputs["last_change"] > 1e-3  # the change did reach the last position
    check = next(s for s in snapshots(non_ascii)["snapshots"] if s["number"] == 12)["check"]
    assert check["passed"] and "last byte changed" in check["detail"]


def test_cached_and_recomputed_logits_agree():
    import torch

    run = run_report("gpt", prompt="Hello, world", generate=6)
    cached, recomputed = (run.recording.tensor(f"generate.{n}_logits") for n in ("cached", "recomputed"))
    assert cached.shape == recomputed.shape == (1, 6, 256)
    torch.testing.assert_close(cached, recomputed, rtol=1e-5, atol=1e-5)  # float32 rounding grows with the trained logits
    from transformer_trace.reports.gpt.checks import CacheMatchesRecomputation
    from transformer_trace.sources import Ref

    check = CacheMatchesRecomputation(out=Ref("generate.cached_logits"), recomputed=Ref("generate.recomputed_logits"),
                                      ids=Ref("ids"), new_ids=Ref("generate.new_ids"))
    result = check.run(run)
    assert result.passed, result.detail


@pytest.mark.parametrize("weights, prompt, n_new", [("trained", "The cat sat on the mat.", 64), ("random", "Hi", 48),
                                                     ("trained", "x", 1), ("trained", "x", 0)])
def test_the_training_pages_continuation_is_the_bytes_generate_appends(weights, prompt, n_new):
    """The training page's continuations skip generate's per-step recomputation, not its bytes."""
    import torch

    from transformer_trace.reports.gpt.options import GPTOptions
    from transformer_trace.reports.gpt.runner import greedy_continuation, weighted_model

    model, _, _ = weighted_model(GPTOptions(weights=weights))
    ids = torch.tensor([encode(prompt)])
    with torch.no_grad():
        expected = model.generate(ids, n_new)[0][0].tolist() if n_new else []
        assert greedy_continuation(model, ids, n_new) == expected


def test_parameter_table_counts_the_tied_matrix_once(non_ascii):
    overview = (non_ascii / "index.md").read_text(encoding="utf-8")
    total = int(re.search(r"\| \*\*total\*\* \| \*\*([\d,]+)\*\* \|", overview)[1].replace(",", ""))
    assert total == snapshots(non_ascii)["inputs"]["n_params"]
    assert snapshots(non_ascii)["inputs"]["n_params_untied"] - total == 256 * 128


@pytest.mark.parametrize("argv, message", [
    (["--prompt", ""], "the prompt is empty"),
    (["--prompt", "é" * 125], "the prompt has 250 bytes in UTF-8, more than the 249 that fit"),
    (["--prompt", "abc", "--generate", "255"], "the prompt has 3 bytes in UTF-8, more than the 2 that fit"),
    (["--heads", "3"], "--heads 3 must divide --d-model 128"),
])
def test_bad_prompts_and_sizes_exit_2_with_one_line(argv, message, capsys, tmp_path):
    assert main(["build", "--model", "gpt", "--out", str(tmp_path / "docs"), "-q", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "docs").exists()


def test_figures_stay_readable_at_the_longest_prompt(tmp_path):
    longest = ("The quick brown fox jumps over the lazy dog. " * 6)[:249]
    run = run_report("gpt", prompt=longest)
    assert run.dims["T"] == 249 and run.dims["S"] == 256
    for fig in GPT.figures:
        path = tmp_path / f"{fig.id}.png"
        fig.drawing.draw(run, path)
        width, height = Image.open(path).size
        assert width <= 2000 and height <= 2000, (fig.id, width, height)
