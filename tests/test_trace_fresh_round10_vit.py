"""Round ten's fresh ViTs (tests/trace_fresh/ROUND10_VIT.md): the forms they wrote that `trace` could not judge, held
by tiny scripts of our own (no upstream file), and the three implementations' correct code traced where their marked
upstream files are present beside our own (the folder `measure.py` measured: $TRACE_FRESH_ROUND10, by default
/work/fresh_round10/<folder>); elsewhere (CI: upstream code is never committed) skipped.

- mean pooling with a LayerNorm of the mean on the same line (`self.fc_norm(x.mean(1))`, an MAE encoder used as a
  classifier): S24 is that norm of the mean of the final sequence's rows; the mean of other rows under it is not;
- mean pooling that leaves the class token out (`x[:, 1:].mean(dim=1)`), where the run captured the class token
  (S05): S24 is the mean of the rows after row 0; without that evidence it is not taken for it;
- no class token at all: the positions are added to the patch embeddings (S07 read against S04 where S06 does not
  exist), and twice the table is still named.
"""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced
from tests.fresh_rounds import our_files_only, red_and_passed, upstream_driver  # noqa: F401 - a fixture
from tests.fresh_rounds import traced as traced_snapshots

VITS = ["pengzhiliang_MAE_pytorch", "gianlucagiudice_ViT_from_scratch", "Samruddhi2212_vit_from_scratch"]

# an MAE-style encoder used as a classifier: no class token, the positions added to the patch embeddings, mean pooling
# and a LayerNorm of the mean on one line
NO_CLASS_TOKEN = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, K = 2, 16, 16, 10


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Conv2d(3, C, kernel_size=8, stride=8)
        self.pos_embed = nn.Parameter(torch.randn(1, N, C))
        self.block = nn.Sequential(nn.Linear(C, C), nn.GELU(), nn.Linear(C, C))
        self.fc_norm = nn.LayerNorm(C)
        self.head = nn.Linear(C, K)
        with torch.no_grad():
            self.fc_norm.weight.uniform_(0.5, 1.5)
            self.fc_norm.bias.uniform_(-0.5, 0.5)

    def forward(self, img):
        x = self.proj(img).flatten(2).transpose(1, 2)  # BREAKPOINT S04
        x = x + self.pos_embed  # BREAKPOINT S07
        x = x + self.block(x)  # BREAKPOINT S23
        pooled = self.fc_norm(x.mean(1))  # BREAKPOINT S24
        return self.head(pooled)  # BREAKPOINT S25


with torch.no_grad():
    logits = Encoder().eval()(torch.randn(B, 3, 32, 32))
'''


def test_a_layernorm_of_the_mean_pooled_rows_is_read_as_mean_pooling(tmp_path):
    code, checks = traced(tmp_path, NO_CLASS_TOKEN)
    assert code == 0, checks[""]
    assert checks["S24"]["passed"] is True and "mean" in checks["S24"]["detail"], checks["S24"]
    assert checks[""]["counts"]["unrecognised"] == 0, checks[""]


@pytest.mark.parametrize("pooled", ["x[:, 1:].mean(1)", "x[:, :-1].mean(1)"])
def test_the_mean_of_other_rows_under_the_norm_is_not_taken_for_mean_pooling(tmp_path, pooled):
    code, checks = traced(tmp_path, NO_CLASS_TOKEN.replace("x.mean(1)", pooled))
    assert checks["S24"]["passed"] is not True, checks["S24"]


def test_positions_of_a_model_without_a_class_token_are_added_to_the_patch_embeddings(tmp_path):
    code, checks = traced(tmp_path, NO_CLASS_TOKEN)
    assert checks["S07"]["passed"] is True and "pos_embed" in checks["S07"]["detail"], checks["S07"]


def test_positions_added_twice_without_a_class_token_are_named(tmp_path):
    code, checks = traced(tmp_path, NO_CLASS_TOKEN.replace("x = x + self.pos_embed", "x = x + 2 * self.pos_embed"))
    assert code == 1 and checks[""]["first_failure"].startswith("S07"), checks[""]
    assert checks["S07"]["evidence"]["name"] == "positions added twice", checks["S07"]


# a class token kept in the sequence but not pooled: the mean of the patch rows, then a LayerNorm on the next line
PATCH_MEAN = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, K = 2, 16, 16, 10


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Conv2d(3, C, kernel_size=8, stride=8)
        self.cls_token = nn.Parameter(torch.randn(1, 1, C))
        self.block = nn.Sequential(nn.Linear(C, C), nn.GELU(), nn.Linear(C, C))
        self.norm = nn.LayerNorm(C)
        self.head = nn.Linear(C, K)

    def forward(self, img):
        x = self.proj(img).flatten(2).transpose(1, 2)  # BREAKPOINT S04
        cls_tokens = self.cls_token.expand(B, -1, -1)  # BREAKPOINT S05
        x = torch.cat([cls_tokens, x], dim=1)  # BREAKPOINT S06
        x = x + self.block(x)
        x = x[:, 1:].mean(dim=1)  # BREAKPOINT S24
        x = self.norm(x)
        return self.head(x)  # BREAKPOINT S25


with torch.no_grad():
    logits = Model().eval()(torch.randn(B, 3, 32, 32))
'''


def test_mean_pooling_that_leaves_the_captured_class_token_out_is_read_as_such(tmp_path):
    code, checks = traced(tmp_path, PATCH_MEAN)
    assert code == 0, checks[""]
    assert checks["S24"]["passed"] is True and "after row 0" in checks["S24"]["detail"], checks["S24"]


def test_without_the_class_token_captured_the_mean_after_row_0_is_not_assumed(tmp_path):
    code, checks = traced(tmp_path, PATCH_MEAN.replace("expand(B, -1, -1)  # BREAKPOINT S05", "expand(B, -1, -1)"))
    assert checks["S24"]["passed"] is not True, checks["S24"]


def test_round_ten_has_its_three_vits_each_with_our_files_only():
    assert our_files_only(10, VITS, stubs=("timm", "pytorch_lightning")) == 18


@pytest.mark.slow
@pytest.mark.parametrize("name", VITS)
def test_round_ten_vits_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(tmp_path,
                                                                                             upstream_driver, name):
    red, passed = red_and_passed(traced_snapshots(upstream_driver(10, name), tmp_path / "out"))
    assert red == {}
    assert passed >= 16, "the checks really ran"
