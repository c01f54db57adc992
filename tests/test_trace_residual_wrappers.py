"""Residual sums made inside a module of the user's (issue 40: a planted bug is named at its own step).

A post-norm "add & norm" module (brandokoch's ``AddAndNorm(x, residual)``, forward ``layer_norm(x + residual)``):
the marked step is the LayerNorm of the sum the module made, so it is read with the module's arguments as the sum's
operands, the one equal to the captured stream as the stream, the other as the sublayer output. A stream zeroed
among the arguments, or dropped inside the module, is "residual dropped" at its own step; the same holds where the
line adds the tensors it read itself (``norm(attended + x)``). A single tensor normalised (``x = self.norm(x)``
after ``x = x + attended``) may be the sum itself: never called a dropped residual.

One residual line shared by both sums (Zuppichini's ``x += res`` in a ``ResidualAdd(fn)`` that runs only inside an
nn.Sequential, marked "S16 or S19"): its hits are told apart by the sublayer the running wrapper holds, an attention
module or an MLP, so each sum is checked, and a residual dropped there is named at its own step."""

from __future__ import annotations

import pytest
import torch.nn as nn

from tests.conftest import trace_source as traced
from transformer_trace.reports import REPORTS
from transformer_trace.trace.child.running_module import _holds
from transformer_trace.trace.reading.shared_lines import ATTENTION_RESIDUAL, MLP_RESIDUAL, snapshot_sublayer

ADD_AND_NORM = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, S, C, H = 2, 7, 16, 2


class AddAndNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer_norm = nn.LayerNorm(C)

    def forward(self, x, residual):
        return self.layer_norm(x + residual)


class EncoderBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(C, H, batch_first=True)
        self.ffn = nn.Sequential(nn.Linear(C, 4 * C), nn.ReLU(), nn.Linear(4 * C, C))
        self.add_norm_1, self.add_norm_2 = AddAndNorm(), AddAndNorm()
        self.norm = nn.LayerNorm(C)

    def forward(self, x):  # Snapshot #6 x
        attended = self.attn(x, x, x, need_weights=False)[0]
        x = self.add_norm_1(x, attended)  # Snapshot #15
        out = self.ffn(x)
        return self.add_norm_2(out, x)  # Snapshot #19


with torch.no_grad():
    EncoderBlock().eval()(torch.randn(B, S, C))
'''


def test_a_post_norm_step_made_inside_an_add_and_norm_module_is_read_from_its_arguments(tmp_path):
    code, checks = traced(tmp_path, ADD_AND_NORM)
    assert code == 0, checks[""]
    for label in ("#15", "#19"):
        assert checks[label]["passed"] is True, checks[label]
        assert checks[label]["name"] == "equals LayerNorm(input + sublayer output)", checks[label]
        assert "of the AddAndNorm the line called" in checks[label]["detail"], checks[label]


@pytest.mark.parametrize("changes, said", [
    # the stream zeroed among the arguments (brandokoch's B4) at #15; at #19 the line adds what it read itself
    ((("self.add_norm_1(x, attended)", "self.add_norm_1(attended, 0 * x)"),
      ("return self.add_norm_2(out, x)", "return self.norm(out + 0 * x)")),
     {"#15": "leaves out x (#6)", "#19": "leaves out x (#15)"}),
    # the module drops its first argument: the stream at #15, the MLP's output at #19 (called the other way round)
    ((("self.layer_norm(x + residual)", "self.layer_norm(residual)"),),
     {"#15": "leaves out x (#6)", "#19": "leaves out encoder.layers.0.mlp.out"}),
])
def test_an_operand_left_out_of_an_add_and_norm_is_named_residual_dropped_at_its_own_step(tmp_path, changes, said):
    source = ADD_AND_NORM
    for old, new in changes:
        source = source.replace(old, new)
    code, checks = traced(tmp_path, source)
    assert code == 1, checks[""]
    assert checks[""]["first_failure"].startswith("#15"), checks[""]
    for label, left_out in said.items():
        assert checks[label]["evidence"]["name"] == "residual dropped", checks[label]
        assert left_out in checks[label]["evidence"]["message"], checks[label]


def test_a_post_norm_sum_the_line_normalises_itself_passes(tmp_path):
    """The line adds the tensors it read (the stream and the sublayer output); or the sum was made on the line before
    and the marked line normalises it: one tensor read, which may be the sum itself, is never a residual dropped."""
    source = ADD_AND_NORM.replace("x = self.add_norm_1(x, attended)", "x = self.norm(attended + x)").replace(
        "return self.add_norm_2(out, x)  # Snapshot #19", "x = x + out\n        return self.norm(x)  # Snapshot #19")
    code, checks = traced(tmp_path, source)
    assert code == 0, checks[""]
    assert checks["#15"]["passed"] is True and "as the line read it" in checks["#15"]["detail"], checks["#15"]
    assert checks["#19"]["passed"] is True, checks["#19"]


# --- one residual line shared by both sums, run only inside an nn.Sequential (Zuppichini's ViT) ---------------------

RESIDUAL_ADD = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, H = 2, 5, 16, 2


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv, self.projection = nn.Linear(C, 3 * C), nn.Linear(C, C)

    def forward(self, x):
        q, k, v = self.qkv(x).view(B, N, 3, H, C // H).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-2, -1) / (C // H) ** 0.5, dim=-1)
        out = (att @ v).transpose(1, 2).reshape(B, N, C)
        return self.projection(out)  # BREAKPOINT S15


class ResidualAdd(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        res = x
        x = self.fn(x)
        x += res  # BREAKPOINT S16 or S19
        return x


class Block(nn.Sequential):
    def __init__(self):
        super().__init__(
            ResidualAdd(nn.Sequential(nn.LayerNorm(C), Attention())),
            ResidualAdd(nn.Sequential(nn.LayerNorm(C), nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C))))


model = nn.Sequential(Block(), Block()).eval()
x = torch.randn(B, N, C)  # BREAKPOINT S08
with torch.no_grad():
    model(x)
'''


@pytest.mark.parametrize("number, sublayer", [
    (16, ATTENTION_RESIDUAL), (19, MLP_RESIDUAL), (17, None),  # the ViT's: S17, the MLP's first Linear, is no sum
])
def test_a_vit_snapshot_is_told_as_the_residual_sum_of_the_sublayer_its_check_adds_last(number, sublayer):
    snap = next(s for s in REPORTS["vit"].snapshots if s.number == number)
    assert snapshot_sublayer(snap) == sublayer


@pytest.mark.parametrize("wrapped, holds", [
    (nn.Sequential(nn.LayerNorm(8), nn.MultiheadAttention(8, 2)), "attention"),
    (nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 8)), "mlp"),
    (nn.ModuleDict({"attn": nn.MultiheadAttention(8, 2), "fc": nn.Linear(8, 8)}), None),  # a whole block: both
    (nn.Sequential(nn.LayerNorm(8), nn.GELU()), None),                                    # neither
])
def test_the_module_running_a_shared_residual_line_says_which_sublayer_it_holds(wrapped, holds):
    assert _holds(wrapped) == holds


def test_one_residual_line_run_only_inside_sequentials_is_split_into_its_two_sums_by_the_sublayer_held(tmp_path):
    code, checks = traced(tmp_path, RESIDUAL_ADD)
    assert code == 0, checks[""]
    assert checks["S16"]["passed"] is True, checks["S16"]
    assert "S19" in checks, checks[""]  # captured, as the MLP's sum (its sublayer output no snapshot shows)


def test_a_residual_dropped_in_the_shared_wrapper_is_named_at_the_attentions_sum(tmp_path):
    code, checks = traced(tmp_path, RESIDUAL_ADD.replace("x += res  #", "x = x  #"))
    assert code == 1, checks[""]
    assert checks[""]["first_failure"].startswith("S16"), checks[""]
    assert checks["S16"]["evidence"]["name"] == "residual dropped", checks["S16"]
    assert checks["S19"]["evidence"]["name"] == "residual dropped", checks["S19"]
