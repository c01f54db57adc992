"""Round eleven's fresh ViTs (tests/trace_fresh/ROUND11_VIT.md): the forms they wrote that `trace` could not judge, held
by tiny scripts of our own (no upstream file), and the three implementations' correct code traced where their marked
upstream files are present beside our own (the folder `measure.py` measured: $TRACE_FRESH_ROUND11, by default
/work/fresh_round11/<folder>); elsewhere (CI: upstream code is never committed) skipped.

- the queries scaled by 1/√hs on the line that takes them from the fused projection (CaiT's `q, k, v = qkv[0] *
  self.scale, qkv[1], qkv[2]`): S09 is that part × 1/√hs, and the scores S12, their product with the keys, are
  Q·Kᵀ/√hs, not "1/√d missing"; with the scale really left out the scores are still named;
- the heads split without moving the axis (`q.reshape(B, h, N, hs)` for `q.view(B, N, h, hs).transpose(1, 2)`): a
  bug form of S09–S11, the mirror of S15's merge;
- a patch embedding normalised before and after its Linear, `nn.Sequential(LayerNorm, Linear, LayerNorm)` called on
  the patches cut on an earlier line (S03): S04 is that chain of the captured S03, recomputed from the modules' own
  weights; the chain given another tensor is not taken for it.
"""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced
from tests.fresh_rounds import our_files_only, red_and_passed, upstream_driver  # noqa: F401 - a fixture
from tests.fresh_rounds import traced as traced_snapshots

VITS = ["explainingai_code_VIT_Pytorch", "sithu31296_sota_backbones", "huggingface_nanoVLM"]

# an attention whose queries are scaled where q, k and v are taken from the fused projection
SCALED_WHERE_TAKEN = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, H = 2, 9, 16, 4


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = (C // H) ** -0.5
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)

    def forward(self, x):
        qkv = self.qkv(x).reshape(B, N, 3, H, C // H).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0] * self.scale, qkv[1], qkv[2]  # BREAKPOINT S09, S10, S11
        attn = q @ k.transpose(-2, -1)  # BREAKPOINT S12
        attn = attn.softmax(dim=-1)  # BREAKPOINT S13
        x = attn @ v  # BREAKPOINT S14
        x = x.transpose(1, 2).reshape(B, N, C)
        return self.proj(x)  # BREAKPOINT S15


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(C)
        self.attn = Attention()

    def forward(self, x):  # BREAKPOINT S08
        x = x + self.attn(self.norm1(x))  # BREAKPOINT S16
        return x


with torch.no_grad():
    out = Block().eval()(torch.randn(B, N, C))
'''

# q, k and v split from one projection, each split into heads on a line of its own, the attention fused
SPLIT_LINES = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, H = 2, 9, 16, 4


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)

    def forward(self, x):
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, N, H, C // H).transpose(1, 2)  # BREAKPOINT S09
        k = k.view(B, N, H, C // H).transpose(1, 2)  # BREAKPOINT S10
        v = v.view(B, N, H, C // H).transpose(1, 2)  # BREAKPOINT S11
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v)  # BREAKPOINT S14
        y = y.transpose(1, 2).contiguous().view(B, N, C)
        return self.proj(y)  # BREAKPOINT S15


with torch.no_grad():
    out = Attention().eval()(torch.randn(B, N, C))
'''


# patches cut on one line, then LayerNorm -> Linear -> LayerNorm in one nn.Sequential on the next
NORMED_PATCH_EMBEDDING = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, C, P = 2, 8, 4


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch_embed = nn.Sequential(nn.LayerNorm(3 * P * P), nn.Linear(3 * P * P, C), nn.LayerNorm(C))
        with torch.no_grad():
            for norm in (self.patch_embed[0], self.patch_embed[2]):
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.uniform_(-0.5, 0.5)

    def forward(self, img):
        out = img.reshape(B, 3, 4, P, 4, P).permute(0, 2, 4, 3, 5, 1).reshape(B, 16, 3 * P * P)  # BREAKPOINT S03
        out = self.patch_embed(out)  # BREAKPOINT S04
        return out


img = torch.randn(B, 3, 16, 16)  # BREAKPOINT S01
with torch.no_grad():
    out = Embed().eval()(img)
'''


def test_a_patch_embedding_normalised_before_and_after_its_linear_is_read_as_that_chain(tmp_path):
    code, checks = traced(tmp_path, NORMED_PATCH_EMBEDDING)
    assert code == 0 and checks["S04"]["passed"] is True, checks["S04"]
    assert "LayerNorm → Linear → LayerNorm" in checks["S04"]["detail"], checks["S04"]


def test_that_chain_given_another_tensor_than_the_captured_input_is_not_taken_for_it(tmp_path):
    code, checks = traced(tmp_path, NORMED_PATCH_EMBEDDING.replace("self.patch_embed(out)",
                                                                   "self.patch_embed(out.flip(1))"))
    assert checks["S04"]["passed"] is not True, checks["S04"]


def test_queries_scaled_where_they_are_taken_give_scores_read_as_scaled(tmp_path):
    code, checks = traced(tmp_path, SCALED_WHERE_TAKEN)
    assert code == 0, checks[""]
    assert checks["S09"]["passed"] is True and "× 1/√4" in checks["S09"]["detail"], checks["S09"]
    assert checks["S12"]["passed"] is True and "where the queries are taken (S09)" in checks["S12"]["name"]


def test_queries_left_unscaled_on_that_line_still_give_the_missing_scale(tmp_path):
    code, checks = traced(tmp_path, SCALED_WHERE_TAKEN.replace("qkv[0] * self.scale,", "qkv[0],"))
    assert code == 1 and checks[""]["first_failure"].startswith("S12"), checks[""]
    assert "without the 1/√4" in checks["S12"]["detail"]


def test_split_lines_of_correct_code_pass(tmp_path):
    code, checks = traced(tmp_path, SPLIT_LINES)
    assert code == 0 and all(checks[label]["passed"] is True for label in ("S09", "S10", "S11", "S14")), checks


@pytest.mark.parametrize("line, label", [("q = q.view(B, N, H, C // H).transpose(1, 2)", "S09"),
                                         ("k = k.view(B, N, H, C // H).transpose(1, 2)", "S10"),
                                         ("v = v.view(B, N, H, C // H).transpose(1, 2)", "S11")])
def test_heads_split_without_moving_the_axis_are_named(tmp_path, line, label):
    name = line[0]
    code, checks = traced(tmp_path, SPLIT_LINES.replace(line, f"{name} = {name}.reshape(B, H, N, C // H)"))
    assert code == 1 and checks[""]["first_failure"].startswith(label), checks[""]
    assert "the heads were split without moving the axis" in checks[label]["detail"], checks[label]


def test_round_eleven_has_its_three_vits_each_with_our_files_only():
    assert our_files_only(11, VITS, stubs=("einops", "models")) == 18


@pytest.mark.slow
@pytest.mark.parametrize("name", VITS)
def test_round_eleven_vits_correct_code_gets_no_red_verdict_where_its_upstream_files_are_present(tmp_path,
                                                                                               upstream_driver, name):
    red, passed = red_and_passed(traced_snapshots(upstream_driver(11, name), tmp_path / "out"))
    assert red == {}
    assert passed >= 12, "the checks really ran"
