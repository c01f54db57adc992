"""What round twenty's first result on fresh ViTs found unread (tests/trace_fresh/ROUND20_VIT.md), built here in
scripts of our own, none from the upstream code:

- a distilled ViT's two heads, called on unmarked statements before a marked ``return (x_cls + x_dist) / 2`` inside an
  ``if``/``else``: the feeding statements are now looked for before the branch too (reading/feeders.py), and the logits
  are read from the heads' calls (reading/head_rows.py): their mean, each head on a token of the model's own; a head
  on a patch row and two heads summed are named;
- a head applied to every token, its row taken on the same line (``self.head(x)[:, 0]``): the row read likewise.
"""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced
from transformer_trace.trace.reading.feeders import feeding_statements

DISTILLED = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, K = 2, 4, 8, 5


class Distilled(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(12, C)
        self.cls_token = nn.Parameter(torch.randn(1, 1, C))
        self.dist_token = nn.Parameter(torch.randn(1, 1, C))
        self.block = nn.Linear(C, C)
        self.head = nn.Linear(C, K)
        self.head_dist = nn.Linear(C, K)

    def forward(self, patches):
        x = self.embed(patches)  # BREAKPOINT S04
        x = torch.cat(TOKENS, dim=1)  # BREAKPOINT S06
        x = x + torch.tanh(self.block(x))  # BREAKPOINT S20
        x_cls = self.head(x[:, 0])
        x_dist = self.head_dist(x[:, DIST_ROW])
        if self.training:
            return x_cls, x_dist
        else:
            return LOGITS  # BREAKPOINT S25


with torch.no_grad():
    Distilled().eval()(torch.randn(B, N, 12))
'''
CLS, DIST = "self.cls_token.expand(B, -1, -1)", "self.dist_token.expand(B, -1, -1)"


def _distilled(tokens: str = f"[{CLS}, {DIST}, x]", row: int = 1, logits: str = "(x_cls + x_dist) / 2") -> str:
    return DISTILLED.replace("TOKENS", tokens).replace("DIST_ROW", str(row)).replace("LOGITS", logits)


def test_a_statement_before_the_branch_a_marked_line_is_in_feeds_it():
    source = _distilled()
    line = source.splitlines().index("            return (x_cls + x_dist) / 2  # BREAKPOINT S25") + 1
    assert feeding_statements(source, line, line) == [(line - 4, line - 4), (line - 5, line - 5)]


def test_a_distilled_vits_two_heads_averaged_pass_with_the_rows_they_read(tmp_path):
    code, checks = traced(tmp_path, _distilled())
    assert code == 0, checks[""]
    assert checks["S25"]["passed"] is True
    assert "the mean of the 2 heads' outputs" in checks["S25"]["detail"]
    assert "reads row 0 of S20" in checks["S25"]["detail"] and "reads row 1 of S20" in checks["S25"]["detail"]


@pytest.mark.parametrize("tokens, row", [
    (f"[{CLS}, {DIST}, x]", 2),  # the distillation head on the first patch
    (f"[{CLS}, x, {DIST}]", 1),  # the distillation token after the patches, its head still on row 1
])
def test_a_head_on_a_patch_row_is_named(tmp_path, tokens, row):
    code, checks = traced(tmp_path, _distilled(tokens, row))
    assert code == 1
    assert checks[""]["first_failure"].startswith("S25")
    assert checks["S25"]["evidence"]["name"] == "a head reads a patch row"


def test_two_heads_summed_not_averaged_are_named(tmp_path):
    code, checks = traced(tmp_path, _distilled(logits="x_cls + x_dist"))
    assert code == 1
    assert checks[""]["first_failure"].startswith("S25")
    assert checks["S25"]["evidence"]["name"] == "two heads summed, not averaged"


EVERY_TOKEN = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, K = 2, 4, 8, 5
embed, block, head = nn.Linear(12, C), nn.Linear(C, C), nn.Linear(C, K)
cls_token = torch.randn(1, 1, C)
with torch.no_grad():
    x = embed(torch.randn(B, N, 12))  # BREAKPOINT S04
    x = torch.cat(TOKENS, dim=1)  # BREAKPOINT S06
    x = x + torch.tanh(block(x))  # BREAKPOINT S20
    logits = head(x)[:, 0]  # BREAKPOINT S25
'''


def test_a_head_on_every_token_with_the_class_row_taken_after_it_passes(tmp_path):
    code, checks = traced(tmp_path, EVERY_TOKEN.replace("TOKENS", "[cls_token.expand(B, -1, -1), x]"))
    assert code == 0, checks[""]
    assert checks["S25"]["passed"] is True
    assert "row 0 of Linear applied to every token" in checks["S25"]["detail"]


def test_a_head_on_every_token_reading_a_patch_row_is_named(tmp_path):
    code, checks = traced(tmp_path, EVERY_TOKEN.replace("TOKENS", "[x, cls_token.expand(B, -1, -1)]"))
    assert code == 1
    assert checks["S25"]["evidence"]["name"] == "a head reads a patch row"


# a fused projection split into heads on the statement that calls it, the marked line unbinding its three parts
FUSED_SPLIT = '''\
import math
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, H = 2, 6, 16, 4


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc1, self.fc2 = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):  # BREAKPOINT S08
        qkv = self.qkv(QKV_INPUT).reshape(B, N, 3, H, C // H).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)  # BREAKPOINT S09, S10, S11
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // H)  # BREAKPOINT S12
        probs = scores.softmax(-1)  # BREAKPOINT S13
        context = probs @ v  # BREAKPOINT S14
        x = x + self.proj(context.transpose(1, 2).reshape(B, N, C))  # BREAKPOINT S16
        x = x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm2(x))))  # BREAKPOINT S19
        return x


with torch.no_grad():
    Block().eval()(torch.randn(B, N, C))
'''


NOT_TRACED_BACK = ("a fused projection split on the statement that calls it is not traced back to (feeders.py): "
                   "the trace-back (73a1e59) read q scaled where taken (fresh round 11) and a split over the heads "
                   "axis (round 15) wrongly, so it was taken out; q, k and v are read as the line read them")


@pytest.mark.xfail(strict=True, reason=NOT_TRACED_BACK)
def test_q_k_and_v_split_on_the_statement_calling_the_fused_projection_are_recomputed_from_it(tmp_path):
    """They had passed "as the line read them": the split compared with itself, the Linear not read."""
    code, checks = traced(tmp_path, FUSED_SPLIT.replace("QKV_INPUT", "self.norm1(x)"))
    assert code == 0, checks[""]
    for label in ("S09", "S10", "S11"):
        assert checks[label]["passed"] is True
        assert "the Linear an unmarked statement before it called" in checks[label]["detail"]


@pytest.mark.xfail(strict=True, reason=NOT_TRACED_BACK)
def test_the_fused_projection_given_the_stream_not_its_layernorm_is_named_at_q(tmp_path):
    code, checks = traced(tmp_path, FUSED_SPLIT.replace("QKV_INPUT", "x"))
    assert code == 1
    assert checks[""]["first_failure"].startswith("S09")
    assert checks["S09"]["evidence"]["name"] == "sublayer given the stream, not its LayerNorm"


def test_the_mlp_hidden_step_reads_fc1_from_the_statement_before_it(tmp_path):
    """``h = self.fc1(...)`` unmarked, then ``h = gelu(h)  # BREAKPOINT S17``: the step is no call's output, and the
    check had read GELU's range alone (a necessary condition only); it is now GELU of that Linear, recomputed."""
    mlp = ("        h = self.fc1(self.norm2(x))\n        h = torch.nn.functional.gelu(h)  # BREAKPOINT S17\n"
           "        x = x + self.fc2(h)  # BREAKPOINT S19\n")
    script = FUSED_SPLIT.replace("QKV_INPUT", "self.norm1(x)").replace(
        "        x = x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm2(x))))  # BREAKPOINT S19\n", mlp)
    code, checks = traced(tmp_path, script)
    assert code == 0, checks[""]
    assert checks["S17"]["passed"] is True
    assert checks["S17"]["name"] == "equals GELU(fc1(input))", checks["S17"]
    assert "necessary condition" not in checks["S17"]["detail"]


def test_an_activation_after_the_mlps_output_linear_is_named_at_the_sum(tmp_path):
    """The MLP ``fc2`` output marked, then activated again on an unmarked line before the residual sum (round twenty's
    DeiT applies GELU after fc2 as well): the sum had been unrecognised; it is the stream plus GELU(fc2's output)."""
    mlp = ("        h = self.fc2(torch.nn.functional.gelu(self.fc1(self.norm2(x))))  # BREAKPOINT S18\n"
           "        h = torch.nn.functional.gelu(h)\n        x = x + h  # BREAKPOINT S19\n")
    attention = ("        a = self.proj(context.transpose(1, 2).reshape(B, N, C))  # BREAKPOINT S15\n"
                 "        x = x + a  # BREAKPOINT S16\n")
    script = FUSED_SPLIT.replace("QKV_INPUT", "self.norm1(x)").replace(
        "        x = x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm2(x))))  # BREAKPOINT S19\n", mlp).replace(
        "        x = x + self.proj(context.transpose(1, 2).reshape(B, N, C))  # BREAKPOINT S16\n", attention)
    code, checks = traced(tmp_path, script)
    assert code == 1
    assert checks[""]["first_failure"].startswith("S19"), checks[""]
    assert checks["S19"]["evidence"]["name"] == "an activation after the sublayer's output Linear"
    assert "adds GELU(" in checks["S19"]["evidence"]["message"]
