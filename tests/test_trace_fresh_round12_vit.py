"""Round twelve's fresh ViTs (tests/trace_fresh/ROUND12_VIT.md): the form they wrote that `trace` could not judge, held
by a tiny script of our own (no upstream file), and the three implementations' correct code traced where their marked
upstream files are present beside our own (the folder `measure.py` measured: $TRACE_FRESH_ROUND12, by default
/work/fresh_round12/<folder>); elsewhere (CI: upstream code is never committed) skipped.

- a classifier head that is a pre-logits MLP (`nn.Sequential(Linear, Tanh, Linear)`) called on the pooled row in the
  logits' own line (`self.classifier(x[:, 0])`, no line of the pooling marked): its first Linear was given the
  pooled token, so the last token pooled is named at S25 against the captured final sequence, as for a head of one
  Linear; correct code passes, and an MLP line's first Linear is not read as a head.
"""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced
from tests.fresh_rounds import our_files_only, ours, planted_bugs, red_and_passed, trace_report, with_bug
from tests.fresh_rounds import traced as traced_snapshots
from tests.fresh_rounds import upstream_driver  # noqa: F401 - a fixture

VITS = ["ADulian_Vision_Transformer", "CodexEZ_ViT", "DogWY_My_ViT"]

# the final sequence (S23) marked, then the logits of a pre-logits head on its class token, pooled in the call
PRE_LOGITS_HEAD = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C = 2, 9, 16


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(C)
        self.classifier = nn.Sequential(nn.Linear(C, 4 * C), nn.ACTIVATION(), nn.Dropout(0.1), nn.Linear(4 * C, 5))

    def forward(self, x):
        x = self.norm(x)  # BREAKPOINT S23
        output = self.classifier(x[:, 0])  # BREAKPOINT S25
        return output


with torch.no_grad():
    out = Model().eval()(torch.randn(B, N, C))
'''


@pytest.mark.parametrize("activation", ["Tanh", "GELU", "ReLU"])
def test_a_pre_logits_head_given_the_class_token_passes(tmp_path, activation):
    code, checks = traced(tmp_path, PRE_LOGITS_HEAD.replace("ACTIVATION", activation))
    assert code == 0 and checks["S25"]["passed"] is True, checks["S25"]


@pytest.mark.parametrize("activation", ["Tanh", "GELU", "ReLU"])
@pytest.mark.parametrize("row", ["-1", "3"])
def test_a_pre_logits_head_given_another_row_names_the_wrong_token_pooled(tmp_path, activation, row):
    code, checks = traced(tmp_path, PRE_LOGITS_HEAD.replace("ACTIVATION", activation).replace("x[:, 0]", f"x[:, {row}]"))
    assert code == 1 and checks[""]["first_failure"].startswith("S25"), checks[""]
    assert "the wrong token was pooled" in checks["S25"]["detail"], checks["S25"]
    assert f"row {int(row) % 9} of x (S23)" in checks["S25"]["detail"], checks["S25"]


def test_round_twelve_has_its_three_vits_each_with_our_files_only():
    assert our_files_only(12, VITS, stubs=("tqdm.py",)) == 17


# the checks that must really run on each correct code (its passed count after forms13b: ADulian's S09-S11 read
# through its Linears shared by the heads, tests/test_trace_round13_forms_b.py)
PASSED_AT_LEAST = {"ADulian_Vision_Transformer": 19, "CodexEZ_ViT": 12, "DogWY_My_ViT": 6}


@pytest.mark.slow
@pytest.mark.parametrize("name", VITS)
def test_round_twelve_vits_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(tmp_path,
                                                                                               upstream_driver, name):
    red, passed = red_and_passed(traced_snapshots(upstream_driver(12, name), tmp_path / "out"))
    assert red == {}
    assert passed >= PASSED_AT_LEAST[name], "the checks really ran"


# the bugs round twelve missed that forms13b names (tests/trace_fresh/ROUND12_VIT.md, "After forms13b"): the first
# failing step and its form; a class token appended (B6, B2) is named where row 0 is pooled after it, at S25
NAMED_AFTER_FORMS13B = {("ADulian_Vision_Transformer", "B5"): ("S18", "sublayer given the stream, not its LayerNorm"),
                        ("CodexEZ_ViT", "B3"): ("S25", "the wrong token pooled"),
                        ("CodexEZ_ViT", "B6"): ("S25", "the wrong token pooled"),
                        ("DogWY_My_ViT", "B2"): ("S25", "the wrong token pooled")}


@pytest.mark.slow
@pytest.mark.parametrize("name, bug_id", list(NAMED_AFTER_FORMS13B), ids=" ".join)
def test_round_twelve_bugs_missed_before_are_named_first_where_their_upstream_files_are_present(
        tmp_path, upstream_driver, name, bug_id):
    folder = upstream_driver(12, name).parent
    bug = next(b for b in planted_bugs(ours(12) / name) if b["id"] == bug_id)
    data = trace_report(with_bug(tmp_path, folder, bug), tmp_path / "out", status=1)
    label, form = NAMED_AFTER_FORMS13B[(name, bug_id)]
    assert (data["outcome"]["first_failure"] or "").startswith(f"{label} "), data["outcome"]["first_failure"]
    check = next(s for s in data["snapshots"] if s["label"] == label)["check"]
    assert check["evidence"]["name"] == form, check["detail"]
