"""Evidence already captured is used before a step is called not checkable (issue 40, point 4): a module of the
user's own class whose output is an affine map of its input is a projection, read from its own parameters whatever
its class is called; a residual sum whose sublayer output no snapshot shows takes it from the module the marked line
called, so a dropped residual is named first ("residual dropped") where today's trace said "not checkable"."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from transformer_trace.cli import main
from transformer_trace.trace.reading.projections import user_projection

# A student's ViT encoder: its own classes, a projection class of its own in GPT-2's Conv1D layout (weight (in, out)),
# pre-norm blocks whose attention output (S15) and second residual sum (S19) are marked, the block input not.
STUDENT_VIT = '''\
import math

import torch
import torch.nn as nn

torch.manual_seed(0)
WIDTH, HEADS, TOKENS = 16, 2, 5


class Projection(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_in, n_out) / math.sqrt(n_in))
        self.bias = nn.Parameter(0.1 * torch.randn(n_out))

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).reshape(*x.shape[:-1], -1)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv, self.proj = Projection(WIDTH, 3 * WIDTH), Projection(WIDTH, WIDTH)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, HEADS, C // HEADS).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        probs = (q @ k.transpose(-2, -1) / math.sqrt(C // HEADS)).softmax(dim=-1)
        context = (probs @ v).transpose(1, 2).reshape(B, N, C)
        attn_out = self.proj(context)  # BREAKPOINT S15
        return attn_out


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.attn, self.ln2 = nn.LayerNorm(WIDTH), Attention(), nn.LayerNorm(WIDTH)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH))

    def forward(self, x):
        attn_out = self.attn(self.ln1(x))
        x = x + attn_out
        x = x + self.mlp(self.ln2(x))  # BREAKPOINT S19
        return x


blocks = nn.Sequential(Block(), Block()).eval()
with torch.no_grad():
    out = blocks(torch.randn(2, TOKENS, WIDTH))
'''
DROPPED = ("        x = x + attn_out\n", "        x = attn_out\n")
# the same block with its input marked and the attention's residual sum on one line, its output not marked
ONE_LINE = (("        attn_out = self.attn(self.ln1(x))\n        x = x + attn_out\n",
             "        x_in = x  # BREAKPOINT S08\n        x = x + self.attn(self.ln1(x))  # BREAKPOINT S16\n"),
            ("        attn_out = self.proj(context)  # BREAKPOINT S15\n", "        attn_out = self.proj(context)\n"))


def traced(tmp_path: Path, *changes: tuple[str, str]) -> tuple[int, dict[str, dict]]:
    source = STUDENT_VIT
    for old, new in changes:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    script = tmp_path / "student_vit.py"
    script.write_text(source, encoding="utf-8")
    code = main(["trace", str(script), "--out", str(tmp_path / "out"), "--name", "t", "-q"])
    data = json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))
    return code, {s["label"]: s for s in data["snapshots"] if s["captured"]} | {"": data["outcome"]}


# ----------------------------------------------------------------------------- a projection of the user's own class


def test_a_projection_of_the_users_own_class_is_read_from_its_parameters_whatever_its_name(tmp_path):
    code, steps = traced(tmp_path)
    assert code == 0
    assert steps["S15"]["check"]["passed"] is True, steps["S15"]["check"]["detail"]
    assert "the weights of the Projection it called" in steps["S15"]["check"]["detail"]


def test_a_module_that_is_not_an_affine_map_is_never_taken_for_a_projection(tmp_path):
    code, steps = traced(tmp_path, ("        return torch.addmm(", "        return torch.tanh(torch.addmm("),
                         (".reshape(*x.shape[:-1], -1)\n", ").reshape(*x.shape[:-1], -1)\n"))
    assert code == 0
    assert steps["S15"]["check"]["passed"] is None  # not checkable: its weights are not a projection's
    assert "weights" in steps["S15"]["check"]["detail"]


@pytest.mark.parametrize("stored", ["(out, in)", "(in, out)"])
def test_user_projection_reads_either_weight_layout_and_only_what_reproduces_the_output(stored):
    torch.manual_seed(1)
    weight, bias, x = torch.randn(6, 4), torch.randn(6), torch.randn(2, 3, 4)
    y = x @ weight.T + bias
    kept = weight if stored == "(out, in)" else weight.T
    call = SimpleNamespace(params={"kernel": kept, "shift": bias}, inputs=[x], outputs=[y], module="Dense")
    found = user_projection(call)
    assert found is not None and torch.allclose(found.weight, weight) and torch.equal(found.bias, bias)
    assert user_projection(SimpleNamespace(**{**vars(call), "outputs": [torch.relu(y)]})) is None
    assert user_projection(SimpleNamespace(**{**vars(call), "params": {"a": kept, "b": bias, "c": bias}})) is None


# ----------------------------------------------------------------------------- a residual sum from the module called


def test_a_dropped_residual_is_named_first_at_the_sum_where_the_captured_steps_make_it_alone(tmp_path):
    code, steps = traced(tmp_path, DROPPED)
    assert code == 1
    assert steps[""]["first_failure"].startswith("S19 ")
    check = steps["S19"]["check"]
    assert check["passed"] is False and check["evidence"]["name"] == "residual dropped"
    assert "without blocks.0.input" in check["detail"] and "the output of the Linear the line called" in check["detail"]


def test_the_correct_sum_without_its_block_input_captured_is_not_checkable_never_red(tmp_path):
    code, steps = traced(tmp_path)
    assert code == 0
    assert steps["S19"]["check"]["passed"] is None
    assert steps["S19"]["check"]["detail"] == "needs snapshot S08"


def test_a_residual_sum_whose_sublayer_output_no_snapshot_shows_is_checked_with_the_module_the_line_called(tmp_path):
    code, steps = traced(tmp_path, *ONE_LINE)
    assert code == 0
    assert steps["S16"]["check"]["passed"] is True, steps["S16"]["check"]["detail"]
    assert "taken from the output of the Attention the line called" in steps["S16"]["check"]["detail"]


def test_that_sum_with_its_residual_dropped_fails_as_residual_dropped(tmp_path):
    code, steps = traced(tmp_path, *ONE_LINE, ("        x = x + self.attn(self.ln1(x))  # BREAKPOINT S16\n",
                                                "        x = self.attn(self.ln1(x))  # BREAKPOINT S16\n"))
    assert code == 1
    assert steps[""]["first_failure"].startswith("S16 ")
    assert steps["S16"]["check"]["evidence"]["name"] == "residual dropped"


# ----------------------------------------------------------------------------- probabilities SDPA never shows

SDPA_GPT = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
B, T, C, H = 2, 6, 16, 2
x = torch.randn(B, T, C)
qkv = nn.Linear(C, 3 * C)
with torch.no_grad():
    q, k, v = qkv(x).split(C, dim=2)
    q = q.view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G08
    k = k.view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G09
    v = v.view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G10
    mask = torch.ones(T, T, dtype=torch.bool).tril()[None, None]  # BREAKPOINT G12
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # BREAKPOINT G15
'''


def test_the_context_of_sdpa_is_checked_from_probabilities_derived_through_the_captured_mask(tmp_path):
    script = tmp_path / "sdpa.py"
    script.write_text(SDPA_GPT, encoding="utf-8")
    assert main(["trace", str(script), "--out", str(tmp_path / "out"), "--name", "t", "-q"]) == 0
    data = json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))
    context = next(s for s in data["snapshots"] if s["label"] == "G15")["check"]
    assert context["passed"] is True, context["detail"]
    assert "G14 (derived from G13 (derived from" in context["detail"]  # the masked scores derived from G11 and G12


@pytest.mark.parametrize("call, form", [
    ("attn_mask=mask, scale=1.0)", "1/√d missing"),  # Q·Kᵀ unscaled, masked as the probabilities are
    ("is_causal=False)", "the context computed without its mask"),  # every query sees every key, later ones too
])
def test_the_context_of_sdpa_rebuilt_from_q_and_k_names_the_scale_or_the_mask_it_left_out(tmp_path, call, form):
    script = tmp_path / "sdpa.py"
    script.write_text(SDPA_GPT.replace("attn_mask=mask)", call), encoding="utf-8")
    assert main(["trace", str(script), "--out", str(tmp_path / "out"), "--name", "t", "-q"]) == 1
    data = json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))
    assert data["outcome"]["first_failure"].startswith("G15 ")
    context = next(s for s in data["snapshots"] if s["label"] == "G15")["check"]
    assert context["passed"] is False and context["evidence"]["name"] == form, context["detail"]


# ----------------------------------------------------------------------------- the heads split from captured q, k, v

ENCODER_EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "encoder_decoder_trace.py"
HEADS_UNMARKED = ("  # Snapshot #12\n", "\n")  # q, k and v (#7, #8, #9) marked, their head split not
NO_SCALE = ("q_heads @ k_heads.transpose(-2, -1) / math.sqrt(d_head)", "q_heads @ k_heads.transpose(-2, -1)")


def traced_encoder(tmp_path: Path, *changes: tuple[str, str]) -> tuple[int, dict]:
    source = ENCODER_EXAMPLE.read_text(encoding="utf-8")
    for old, new in changes:
        assert old in source, old
        source = source.replace(old, new)
    script = tmp_path / "encoder.py"
    script.write_text(source, encoding="utf-8")
    code = main(["trace", str(script), "--out", str(tmp_path / "out"), "--name", "t", "-q"])
    return code, json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))


def test_scores_whose_heads_no_snapshot_shows_are_checked_with_the_head_split_of_the_captured_q_and_k(tmp_path):
    code, data = traced_encoder(tmp_path, HEADS_UNMARKED)
    assert code == 0 and data["outcome"]["counts"]["failed"] == 0
    scores = next(s for s in data["snapshots"] if s["label"] == "#10")["check"]
    assert scores["passed"] is True, scores["detail"]
    assert "#12 (derived from #7), #12 (derived from #8)" in scores["detail"]


def test_an_encoder_with_its_1_over_root_d_left_out_and_its_heads_unmarked_is_named_first(tmp_path):
    code, data = traced_encoder(tmp_path, HEADS_UNMARKED, NO_SCALE)
    assert code == 1 and data["outcome"]["first_failure"].startswith("#10 ")
    scores = next(s for s in data["snapshots"] if s["label"] == "#10")["check"]
    assert scores["evidence"]["name"] == "1/√d missing", scores["detail"]


# ----------------------------------------------------------------------------- positions whose table is not captured

VIT_EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "vit_trace.py"
TWO_IMAGES = ("img_tensor = torch.randn(1, 3, IMAGE_SIZE, IMAGE_SIZE)", "img_tensor = torch.randn(2, 3, IMAGE_SIZE, IMAGE_SIZE)")


def traced_example(tmp_path: Path, *changes: tuple[str, str]) -> dict[str, dict]:
    source = VIT_EXAMPLE.read_text(encoding="utf-8")
    for old, new in changes:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    script = tmp_path / "vit_trace.py"
    script.write_text(source, encoding="utf-8")
    main(["trace", str(script), "--out", str(tmp_path / "out"), "--name", "t", "-q"])
    data = json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))
    return {s["label"]: s["check"] for s in data["snapshots"] if s["captured"]}


def test_positions_whose_table_is_not_captured_are_checked_as_a_term_the_same_for_every_item(tmp_path):
    check = traced_example(tmp_path, TWO_IMAGES)["S07"]
    assert check["passed"] is True, check["detail"]
    assert check["name"].startswith("equals its input plus a term that depends on the position only")


def test_a_term_that_differs_between_the_items_is_never_passed_as_positions(tmp_path):
    check = traced_example(tmp_path, TWO_IMAGES, ("x_pos = x_tokens + pos_embed",
                                                  "x_pos = x_tokens + pos_embed * torch.arange(1.0, 3.0).view(2, 1, 1)"))["S07"]
    assert check["passed"] is not True


def test_a_step_holding_nan_is_compared_with_the_calls_outputs_without_an_error():
    from transformer_trace.trace.reading.residuals import _sublayer_call

    step = torch.full((2, 3, 4), float("nan"))
    call = SimpleNamespace(kind="user", outputs=[torch.randn(2, 3, 4)], inputs=[step], params={}, depth=1, module="M")
    assert _sublayer_call([call], step, [step]) is call  # its output is not the step: the sublayer's


# ----------------------------------------------------------------------------- the class token the line read

CLASS_TOKEN = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj, self.class_token = nn.Linear(12, 16), nn.Parameter(torch.randn(1, 16))

    def forward(self, patches):
        x = self.proj(patches)  # BREAKPOINT S04
        x = torch.cat((self.class_token.expand(x.shape[0], -1, -1), x), dim=1)  # BREAKPOINT S06
        return x


with torch.no_grad():
    Embed()(torch.randn(2, 4, 12))
'''


@pytest.mark.parametrize("line, passed", [
    ("torch.cat((self.class_token.expand(x.shape[0], -1, -1), x), dim=1)", True),
    # appended last: a correct form since forms13b, the run read as "class token last" from the parameter the cat read
    ("torch.cat((x, self.class_token.expand(x.shape[0], -1, -1)), dim=1)", True),
])
def test_the_class_token_no_snapshot_shows_is_read_from_the_parameter_the_line_read(tmp_path, line, passed):
    script = tmp_path / "embed.py"
    script.write_text(CLASS_TOKEN.replace("torch.cat((self.class_token.expand(x.shape[0], -1, -1), x), dim=1)", line),
                      encoding="utf-8")
    main(["trace", str(script), "--out", str(tmp_path / "out"), "--name", "t", "-q"])
    data = json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))
    check = next(s for s in data["snapshots"] if s["label"] == "S06")["check"]
    assert check["passed"] is passed, check["detail"]
    assert "needs" not in check["detail"]
