"""Round six's fresh GPT-style and encoder–decoder implementations (tests/trace_fresh/ROUND6_GPT.md) get no red verdict
on their correct code — traced where their upstream files are present beside our own (the folder `measure.py` measured:
$TRACE_FRESH_ROUND6, by default /work/fresh_round6/<folder>); elsewhere (CI: upstream code is never committed) skipped.
The forms these implementations taught `trace` are held without them by tests/test_trace_round6_forms.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.test_trace_fresh import driver_of, traced

OURS = Path(__file__).resolve().parent / "trace_fresh" / "round6"
UPSTREAM = Path(os.environ.get("TRACE_FRESH_ROUND6", "/work/fresh_round6"))
FOLDERS = sorted(path.parent.name for path in OURS.glob("*/planted_bugs.json"))
GPT_AND_ENCODER_DECODER = ["ajhalthor_Transformer_Neural_Network", "d2l_ai_d2l_pytorch_colab_transformer",
                           "meta_llama_llama"]  # the ViTs' correct code: tests/test_trace_fresh_round6_vit_forms.py
VITS = ["Yyzhang2000_VisionTransformer_PyTorch", "d2l_ai_d2l_en", "mlfoundations_open_clip", "uygarkurt_ViT_PyTorch"]


def test_round_six_has_its_seven_folders_each_with_our_files_only():
    assert FOLDERS == sorted(GPT_AND_ENCODER_DECODER + VITS)
    for name in FOLDERS:
        assert {"SOURCE.md", "planted_bugs.json", "markers.json", "upstream.json"} <= {
            p.name for p in (OURS / name).iterdir()}


@pytest.mark.slow
@pytest.mark.parametrize("name", GPT_AND_ENCODER_DECODER)
def test_round_six_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(tmp_path, name):
    folder = UPSTREAM / name
    if not driver_of(folder).exists():
        pytest.skip(f"round six's upstream files are not on this machine ({folder}; see {name}/SOURCE.md)")
    mine = json.loads((OURS / name / "planted_bugs.json").read_text(encoding="utf-8"))
    assert json.loads((folder / "planted_bugs.json").read_text(encoding="utf-8")) == mine, "the folder measured"
    data = traced(driver_of(folder), tmp_path / "out", status=0)
    checks = [s["check"] for s in data["snapshots"] if s["captured"]]
    assert [c["detail"] for c in checks if c["passed"] is False] == []
    assert sum(c["passed"] is True for c in checks) >= 20, "the checks really ran"
