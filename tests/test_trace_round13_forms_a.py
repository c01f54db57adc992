"""Bug forms round twelve's fresh GPT-side implementations showed the checks not knowing (tests/trace_fresh/
ROUND12_GPT.md, "What is left"), each in a script of our own, none from the upstream code: a LayerNorm class of one's
own whose mean (or variance) is taken over the token axis, named "normalised over the wrong axis" with the axes."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

OWN_LAYER_NORM = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C = 2, 8, 16


class LayerNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(C))
        self.bias = nn.Parameter(0.1 * torch.randn(C))

    def forward(self, x):
        mean = x.mean(MEAN_AXIS, keepdim=True)
        var = x.var(VAR_AXIS, keepdim=True, unbiased=False)
        return self.weight * (x - mean) / torch.sqrt(var + 1e-5) + self.bias  # BREAKPOINT G06


def block(x):  # BREAKPOINT G05 x
    return norm(x)


norm = LayerNorm()
with torch.no_grad():
    out = block(3.0 * torch.randn(B, T, C) + torch.randn(B, 1, C))
'''


def _norm(mean_axis: int, var_axis: int) -> str:
    return OWN_LAYER_NORM.replace("MEAN_AXIS", str(mean_axis)).replace("VAR_AXIS", str(var_axis))


@pytest.mark.parametrize("mean_axis, var_axis, said", [
    (1, -1, "the mean over axis 1, the variance over the last axis (the features)"),
    (1, 1, "the mean over axis 1, the variance over axis 1"),
])
def test_a_layer_norm_over_the_token_axis_is_named_normalised_over_the_wrong_axis(tmp_path, mean_axis, var_axis,
                                                                                   said):
    """rishikesh2715/mini-GPT2's B6 (round twelve): ``x.mean(1, keepdim=True)`` in its own LayerNorm class."""
    code, checks = traced(tmp_path, _norm(mean_axis, var_axis))
    assert code == 1
    assert checks["G06"]["passed"] is False, checks["G06"]["detail"]
    assert checks["G06"]["evidence"]["name"] == "normalised over the wrong axis"
    assert said in checks["G06"]["detail"]


def test_a_layer_norm_over_the_features_still_passes(tmp_path):
    code, checks = traced(tmp_path, _norm(-1, -1))
    assert code == 0, checks[""]
    assert checks["G06"]["passed"] is True, checks["G06"]["detail"]


DECODER_LAYER = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, S, C, H = 2, 6, 7, 16, 4


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(C, C, bias=False) for _ in range(4))

    def forward(self, q_in, k_in, v_in, causal):
        Q = self.W_q(q_in)  # Snapshot #21 or #30
        K = self.W_k(k_in)  # Snapshot #22 or #31
        V = self.W_v(v_in)  # Snapshot #23 or #32
        q, k, v = (t.view(B, -1, H, C // H).transpose(1, 2) for t in (Q, K, V))
        scores = q @ k.transpose(-2, -1) / (C // H) ** 0.5
        if causal:
            scores = scores.masked_fill(~torch.ones(q.shape[2], k.shape[2]).tril().bool(), float("-inf"))
        return self.W_o((scores.softmax(-1) @ v).transpose(1, 2).reshape(B, -1, C))


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(C), nn.LayerNorm(C), nn.LayerNorm(C)
        self.self_attention, self.encoder_attention = Attention(), Attention()

    def forward(self, x, encoder_output):  # Snapshot #20 x
        x_norm = self.norm1(x)
        x = x + self.self_attention(x_norm, x_norm, SELF_VALUES, True)  # Snapshot #29
        x_norm = self.norm2(x)
        encoder_output_norm = self.norm3(encoder_output)
        x = x + self.encoder_attention(x_norm, encoder_output_norm, CROSS_VALUES, False)  # Snapshot #36
        return x


with torch.no_grad():
    layer = DecoderLayer().eval()
    for norm in (layer.norm1, layer.norm2, layer.norm3):
        norm.weight.add_(0.1 * torch.randn(C))
        norm.bias.add_(0.1 * torch.randn(C))
    layer(torch.randn(B, T, C), 2.0 * torch.randn(B, S, C) + 1.0)
'''


def _decoder(self_values: str = "x_norm", cross_values: str = "encoder_output_norm") -> str:
    return DECODER_LAYER.replace("SELF_VALUES", self_values).replace("CROSS_VALUES", cross_values)


def test_keys_and_values_of_one_input_pass(tmp_path):
    code, checks = traced(tmp_path, _decoder())
    assert code == 0, checks[""]["first_failure"]
    for label in ("#22", "#23", "#31", "#32"):
        assert checks[label]["passed"] is True, (label, checks[label]["detail"])


def test_values_from_the_encoder_output_before_its_layernorm_are_named_first(tmp_path):
    """ltrujello/Transformer's B4 (round twelve): the cross-attention's K from norm3(encoder_output), its V from
    encoder_output."""
    code, checks = traced(tmp_path, _decoder(cross_values="encoder_output"))
    assert code == 1 and checks[""]["first_failure"].split(" ")[0] == "#32", checks[""]["first_failure"]
    assert checks["#32"]["evidence"]["name"] == "K and V read from different inputs"
    assert "#31's Linear and #32's Linear project one tensor" in checks["#32"]["detail"]


SDPA_ATTENTION = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
B, T, C, H = 2, 8, 32, 4


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(C, 3 * C)
        self.attn_dropout = nn.Dropout(0.2)

    def forward(self, x):
        q, k, v = self.c_attn(x).chunk(3, dim=-1)
        q = q.view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G08
        k = k.view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G09
        v = v.view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G10
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=DROPOUT_P, is_causal=CAUSAL)  # BREAKPOINT G15
        y = MERGE  # BREAKPOINT G16
        return y


attention = Attention().MODE()
with torch.no_grad():
    attention(torch.randn(B, T, C))
'''

SDPA = {"DROPOUT_P": "self.attn_dropout.p", "CAUSAL": "True", "MERGE": "y.transpose(1, 2).contiguous().view(B, T, C)",
        "MODE": "eval"}


def _sdpa(**changed: str) -> str:
    source = SDPA_ATTENTION
    for name, text in {**SDPA, **changed}.items():
        source = source.replace(name, text)
    return source


@pytest.mark.parametrize("changed", [
    {"MODE": "train"},  # training mode: the dropout is the model's own, a correct form
    {"DROPOUT_P": "self.attn_dropout.p if self.training else 0.0"},  # eval mode, no dropout
    {"DROPOUT_P": "self.attn_dropout.p if self.training else 0.0", "MODE": "train"},
], ids=["dropout in training mode", "no dropout in eval mode", "the mode's dropout in training mode"])
def test_an_attention_dropout_where_the_mode_allows_it_is_no_red(tmp_path, changed):
    code, checks = traced(tmp_path, _sdpa(**changed))
    assert code == 0, checks[""]["first_failure"]
    for label in ("G15", "G16"):
        assert checks[label]["passed"] is True, (label, checks[label]["detail"])


def test_an_attention_dropout_active_in_eval_mode_is_named_with_p(tmp_path):
    """rishikesh2715/mini-GPT2's own bug (round twelve): ``dropout_p=self.attn_dropout.p`` after ``model.eval()``."""
    code, checks = traced(tmp_path, _sdpa())
    assert code == 1 and checks[""]["first_failure"].split(" ")[0] == "G15", checks[""]["first_failure"]
    for label in ("G15", "G16"):
        assert checks[label]["evidence"]["name"] == "attention dropout active in eval mode", checks[label]
        assert "p = 0.2" in checks[label]["detail"] and "non-zero weights zeroed" in checks[label]["detail"]


@pytest.mark.parametrize("changed, label, form", [
    ({"CAUSAL": "False"}, "G15", "the context computed without its mask"),
    ({"DROPOUT_P": "self.attn_dropout.p, scale=1.0"}, "G15", "1/√d missing"),
    ({"MERGE": "y.contiguous().view(B, T, C)"}, "G16", "heads merged without moving the axis back"),
], ids=["B1 causal mask off", "B2 scale 1", "B3 merge without the transpose"])
def test_bugs_under_an_attention_dropout_are_named_with_their_form(tmp_path, changed, label, form):
    """mini-GPT2's B1-B3 (round twelve), hidden by its attention dropout: named under the dropout's pattern."""
    code, checks = traced(tmp_path, _sdpa(**changed, MODE="train"))
    assert code == 1
    assert checks[label]["evidence"]["name"] == form, checks[label]
    assert "through a dropout on the attention weights" in checks[label]["detail"]
