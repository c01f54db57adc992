"""What round twenty's first result on fresh GPT and encoder–decoder code missed (tests/trace_fresh/ROUND20_GPT.md),
built here in scripts of our own, none from the upstream code (dwzhang00/Offline-translation, jaketae/alibi).

- Every key masked (Offline-translation B5, #11 had been unrecognised: an inverted padding mask, ``mask == True``
  filled, hides every key of every query, each row uniform): a broken property of any attention where real keys
  exist — the captured mask allows the row some key, or the keys' token IDs are not all one ID (padding is one ID).
  A padded query of an all-padding sequence (one ID throughout) is no evidence: never red (checks/blind_rows.py).
- A pre-norm encoder's residuals added inside a wrapper (Offline-translation #14 and #19 had been not checkable, B4
  named only at the decoder's #29): #14 reads the line's value as the sum and the attention's output from the module
  call of its line, #19 its stream from the LayerNorm the line applied; B4 is then named at #14.
- GELU of the Linear its line called (jaketae and CSE256 G21 had been not checkable, the MLP's LayerNorm unmarked).
- Log-probabilities as the logits step (Offline-translation #42 had been not checkable, B3 unseen): the log-softmax
  over the vocabulary of the Linear the line called; over the positions, its bug form.
- ALiBi beside a scale of its own (jaketae G11 had been unrecognised, B1 unseen): s · Q·Kᵀ plus a relative bias every
  input shares, s fitted; the distances reversed (slopes negative in every head) its bug form.
- Keys kept transposed, (B, h, hs, T), where T = hs (jaketae G09 had been unrecognised): a head split read so."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

# an encoder's self-attention, its padding mask built from the source IDs (True = keep), filled where FILLED
ENCODER_ATTENTION = '''\
import torch

torch.manual_seed(0)
B, h, S, hs = 2, 2, 6, 8
with torch.no_grad():
    src = SOURCE  # Snapshot #1
    q = torch.randn(B, h, S, hs)
    k = torch.randn(B, h, S, hs)
    mask = (src != 0).reshape(B, 1, 1, S)
    scores = q @ k.transpose(-2, -1) / hs ** 0.5  # Snapshot #10
    weights = torch.softmax(scores.masked_fill(FILLED, -1e9), dim=-1)  # Snapshot #11
'''
REAL = "torch.randint(2, 30, (B, S))"
LAST_ITEM_PADDING = "torch.cat([torch.randint(2, 30, (1, S)), torch.zeros(1, S, dtype=torch.long)])"


def _encoder(source: str, filled: str) -> str:
    return ENCODER_ATTENTION.replace("SOURCE", source).replace("FILLED", filled)


def test_an_inverted_padding_mask_hiding_every_real_key_is_red_at_the_weights(tmp_path):
    code, checks = traced(tmp_path, _encoder(REAL, "mask == True"))
    assert code == 1 and checks["#11"]["passed"] is False, checks["#11"]["detail"]
    evidence = checks["#11"]["evidence"]
    assert evidence["name"] == "some real key seen by every real query", evidence
    assert "every key masked" in evidence["message"] and "2 of 2 batch items" in evidence["message"], evidence


@pytest.mark.parametrize("source", [REAL, LAST_ITEM_PADDING])
def test_a_correct_padding_mask_is_never_red_by_the_property(tmp_path, source):
    """An all-padding item (every key masked, each row uniform) beside a real one: its rows are by design."""
    code, checks = traced(tmp_path, _encoder(source, "mask == False"))
    assert checks["#11"]["passed"] is not False, checks["#11"]["detail"]


def test_an_all_padding_item_whose_rows_see_no_key_is_no_evidence(tmp_path):
    """Every key of every item masked where one item is all padding and the other real: only the real item is
    evidence (1 of 2)."""
    code, checks = traced(tmp_path, _encoder(LAST_ITEM_PADDING, "torch.ones_like(mask)"))
    assert checks["#11"]["passed"] is False, checks["#11"]["detail"]
    assert "1 of 2 batch items" in checks["#11"]["evidence"]["message"], checks["#11"]["evidence"]



# A pre-norm encoder layer whose residuals a wrapper adds inside (Offline-translation #14 and #19 had been not
# checkable, its dropped residual, B4, named only at the decoder's #29): #14, a step listing the operands marked on the
# line that returns their sum, reads the line's value as the sum and the attention's output from the module call of
# its line; #19 reads its stream from the input of the LayerNorm the line applied (trace/reading/residuals.py).
PRE_NORM_ENCODER = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, S, C = 2, 6, 16


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(C, C)

    def forward(self, q, k, v):
        return self.proj(torch.softmax(q @ k.transpose(-2, -1) / C ** 0.5, dim=-1) @ v)


class Sublayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(C)

    def forward(self, x, sublayer):
        sub = sublayer(self.norm(x))
        return RETURNED


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()
        self.ff = nn.Sequential(nn.Linear(C, 32), nn.ReLU(), nn.Linear(32, C))
        self.sublayer = nn.ModuleList([Sublayer(), Sublayer()])

    def forward(self, x):  # Snapshot #6 x
        x = self.sublayer[0](x, lambda x: self.attn(x, x, x))  # Snapshot #14
        return self.sublayer[1](x, self.ff)  # Snapshot #19


layer = Layer().eval()
with torch.no_grad():
    y = layer(torch.randn(B, S, C))
'''


def test_a_pre_norm_encoders_residuals_added_inside_a_wrapper_are_read_from_the_line(tmp_path):
    code, checks = traced(tmp_path, PRE_NORM_ENCODER.replace("RETURNED", "x + sub"))
    for label in ("#14", "#19"):
        assert checks[label]["passed"] is True, (label, checks[label]["detail"])
    assert "the line called" in checks["#14"]["detail"], checks["#14"]["detail"]
    assert "the input of the LayerNorm" in checks["#19"]["detail"], checks["#19"]["detail"]


def test_the_residual_dropped_inside_the_wrapper_is_named_at_the_first_sum(tmp_path):
    code, checks = traced(tmp_path, PRE_NORM_ENCODER.replace("RETURNED", "sub"))
    assert code == 1 and checks["#14"]["passed"] is False, checks["#14"]["detail"]
    assert checks["#14"]["evidence"]["name"] == "residual dropped", checks["#14"]["evidence"]



# A GPT's GELU step on a line that calls its first Linear, the LayerNorm before the MLP unmarked (jaketae and CSE256
# G21 had been not checkable, "needs snapshot G19"): its input and weights are the Linear call's
# (trace/reading/activated_calls.py ``activation_of_call``); an activation the step's check does not recompute (a tanh)
# is not read so: never red for it.
MLP_LINE = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
B, T, C = 2, 6, 16


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(C, 4 * C)
        self.fc2 = nn.Linear(4 * C, C)

    def forward(self, x):
        x = ACTIVATION(self.fc1(x))  # BREAKPOINT G21
        return self.fc2(x)  # BREAKPOINT G22


mlp, norm = MLP(), nn.LayerNorm(C)
with torch.no_grad():
    y = mlp(norm(torch.randn(B, T, C)))
'''


def test_a_gelu_of_the_linear_its_line_called_is_read_from_that_call(tmp_path):
    code, checks = traced(tmp_path, MLP_LINE.replace("ACTIVATION", "F.gelu"))
    assert checks["G21"]["passed"] is True, checks["G21"]["detail"]
    assert "its input taken from that call" in checks["G21"]["detail"], checks["G21"]["detail"]


def test_a_tanh_of_the_linear_its_line_called_is_never_red_at_the_gelu_step(tmp_path):
    code, checks = traced(tmp_path, MLP_LINE.replace("ACTIVATION", "torch.tanh"))
    assert checks["G21"]["passed"] is not False, checks["G21"]["detail"]



# Log-probabilities as the logits step, the Linear called on the line (Offline-translation #42 had been not checkable,
# its log-softmax over the positions, B3, unseen): read from the Linear the line called and checked as its
# log-softmax over the vocabulary (checks/log_probs.py, trace/reading/log_probs.py).
GENERATOR = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C, V = 2, 5, 16, 30


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(C, V)

    def forward(self, x):
        return LOG_PROBS  # Snapshot #42


final, generator = nn.LayerNorm(C), Generator()
with torch.no_grad():
    x = final(torch.randn(B, T, C))  # Snapshot #41
    y = generator(x)
'''


@pytest.mark.parametrize("log_probs", ["torch.log_softmax(self.proj(x), dim=-1)", "self.proj(x).log_softmax(-1)"])
def test_log_probabilities_of_the_linear_the_line_called_are_read_as_the_logits_step(tmp_path, log_probs):
    code, checks = traced(tmp_path, GENERATOR.replace("LOG_PROBS", log_probs))
    assert checks["#42"]["passed"] is True, checks["#42"]["detail"]
    assert "log-softmax over the vocabulary" in checks["#42"]["name"], checks["#42"]


def test_a_log_softmax_over_the_positions_is_named_at_the_logits_step(tmp_path):
    code, checks = traced(tmp_path, GENERATOR.replace("LOG_PROBS", "torch.log_softmax(self.proj(x), dim=1)"))
    assert code == 1 and checks["#42"]["passed"] is False, checks["#42"]["detail"]
    assert checks["#42"]["evidence"]["name"] == "log-softmax over the wrong axis", checks["#42"]["evidence"]



# ALiBi beside a scale of its own (jaketae G11 had been unrecognised, its distances reversed, B1, unseen): the scores
# read as s · Q·Kᵀ plus a relative bias every input shares, s fitted from the batch's items; the bias growing with the
# distance to a past key in every head is ALiBi's bug form (checks/fitted_bias.py).
ALIBI_SCORES = '''\
import math

import torch

torch.manual_seed(0)
B, h, T, hs = 2, 4, 6, 8
with torch.no_grad():
    q = torch.randn(B, h, T, hs)  # BREAKPOINT G08
    k = torch.randn(B, h, T, hs)  # BREAKPOINT G09
    slopes = torch.tensor([1 / 2 ** (8 * (i + 1) / h) for i in range(h)])[:, None, None]
    distance = DISTANCE
    scores = q @ k.transpose(-2, -1) / math.sqrt(h * hs) + slopes * distance  # BREAKPOINT G11
'''
FORWARD = "torch.arange(T)[None, :] - torch.arange(T)[:, None]"
BACKWARD = "torch.arange(T)[:, None] - torch.arange(T)[None, :]"


def test_alibi_beside_a_scale_of_its_own_is_read_with_its_slopes(tmp_path):
    code, checks = traced(tmp_path, ALIBI_SCORES.replace("DISTANCE", FORWARD))
    assert checks["G11"]["passed"] is True, checks["G11"]["detail"]
    assert "ALiBi's m_h · (j − i), slopes 0.25, 0.0625" in checks["G11"]["name"], checks["G11"]["name"]


def test_alibi_distances_reversed_are_named_at_the_scores(tmp_path):
    code, checks = traced(tmp_path, ALIBI_SCORES.replace("DISTANCE", BACKWARD))
    assert code == 1 and checks["G11"]["passed"] is False, checks["G11"]["detail"]
    assert checks["G11"]["evidence"]["name"] == "ALiBi's distances reversed", checks["G11"]["evidence"]



def test_alibi_with_the_keys_kept_transposed_is_read_where_positions_and_head_size_are_equal(tmp_path):
    source = (ALIBI_SCORES.replace("DISTANCE", FORWARD).replace("B, h, T, hs = 2, 4, 6, 8", "B, h, T, hs = 2, 4, 8, 8")
              .replace("k = torch.randn(B, h, T, hs)", "k = torch.randn(B, h, hs, T)")
              .replace("q @ k.transpose(-2, -1)", "q @ k"))
    code, checks = traced(tmp_path, source)
    assert checks["G11"]["passed"] is True, checks["G11"]["detail"]
    assert "the keys kept transposed" in checks["G11"]["name"], checks["G11"]["name"]



# Keys kept transposed, (B, h, hs, T), where T = hs (jaketae G09 had been unrecognised): the split read with the
# positions last (checks/interleaved_heads.py ``head_split``); reshaped straight to that shape stays the bug form.
KEPT_KEYS = '''\
import torch

torch.manual_seed(0)
B, T, h, hs = 2, 8, 4, 8
kqv = torch.nn.Linear(h * hs, 3 * h * hs, bias=False)
with torch.no_grad():
    key, query, value = kqv(torch.randn(B, T, h * hs)).chunk(3, dim=-1)
    key = KEYS  # BREAKPOINT G09
    query = query.view(B, T, h, hs).transpose(1, 2)  # BREAKPOINT G08
    value = value.view(B, T, h, hs).transpose(1, 2)  # BREAKPOINT G10
'''


def test_keys_kept_transposed_are_read_as_a_head_split(tmp_path):
    code, checks = traced(tmp_path, KEPT_KEYS.replace("KEYS", "key.view(B, T, h, hs).permute(0, 2, 3, 1)"))
    assert checks["G09"]["passed"] is True, checks["G09"]["detail"]
    assert "kept transposed" in checks["G09"]["detail"], checks["G09"]["detail"]


def test_keys_reshaped_straight_to_the_transposed_shape_are_still_named(tmp_path):
    code, checks = traced(tmp_path, KEPT_KEYS.replace("KEYS", "key.reshape(B, h, hs, T)"))
    assert code == 1 and checks["G09"]["passed"] is False, checks["G09"]["detail"]
    assert checks["G09"]["evidence"]["name"] == "heads split without moving the axis", checks["G09"]["evidence"]
