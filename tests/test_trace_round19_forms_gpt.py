"""What round nineteen's first result on fresh GPT and encoder–decoder code missed (tests/trace_fresh/ROUND19_GPT.md),
built here in scripts of our own, none from the upstream code (beimingli0626/DLCV, mtanghu/LEAP).

- A LayerNorm class of one's own that divides by the variance, not the standard deviation (DLCV B6: #15 and #19 had
  been unrecognised): named as that bug form where ``(x − mean)/(var + ε)`` with the module's weights fits, and a
  broken property of every LayerNorm where it does not (rows centred by the module's bias and gain, with a standard
  deviation above 1); the correct norms the checks know or not (the unbiased standard deviation, ε inside or outside
  the root, a large ε written in the forward, an RMSNorm, no affine step) are never red by it
  (checks/variance_norm.py)."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

POST_NORM_LAYER = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, S, C = 2, 6, 16


class Norm(nn.Module):
    def __init__(self, emb_dim, epsilon=1e-10):
        super().__init__()
        self.epsilon = epsilon
        self.gamma = nn.Parameter(torch.rand(emb_dim) + 0.5)
        self.beta = nn.Parameter(torch.randn(emb_dim) * 0.1)

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return NORMED


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = nn.Linear(C, C)
        self.norm1 = NORM
        self.feed_forward = nn.Sequential(nn.Linear(C, 32), nn.ReLU(), nn.Linear(32, C))
        self.norm2 = NORM

    def forward(self, x):
        out1 = self.attention(x)
        out2 = self.norm1(out1 + x)  # Snapshot #15
        out3 = self.feed_forward(out2)
        out = self.norm2(out2 + out3)  # Snapshot #19
        return out


layer = Layer()
with torch.no_grad():
    x = torch.randn(B, S, C) * SCALE
    y = layer(x)
'''


def _layer(normed: str, scale: float, norm: str = "Norm(C)") -> str:
    return POST_NORM_LAYER.replace("NORMED", normed).replace("NORM", norm).replace("SCALE", repr(scale))


BY_VARIANCE = "self.gamma * (x - mean) / (var + self.epsilon) + self.beta"


@pytest.mark.parametrize("scale", [3.0, 0.05])  # the rows' σ above 1 and below: a spread 1/σ below 1 and above
def test_a_layer_norm_dividing_by_the_variance_is_named_with_its_form(tmp_path, scale):
    code, checks = traced(tmp_path, _layer(BY_VARIANCE, scale))
    assert code == 1, checks[""]
    for label in ("#15", "#19"):
        assert checks[label]["passed"] is False, (label, checks[label]["detail"])
        evidence = checks[label]["evidence"]
        assert evidence["name"] == "divides by the variance, not the standard deviation", evidence
        assert "1/σ" in evidence["message"]


def test_a_layer_norm_whose_rows_spread_more_than_one_breaks_a_property_of_every_layer_norm(tmp_path):
    """No named form fits (the standard deviation to the power 1.5): the recorded rows' spread above 1 is still no
    LayerNorm's."""
    code, checks = traced(tmp_path, _layer("self.gamma * (x - mean) / var.sqrt() ** 1.5 + self.beta", 0.05))
    assert code == 1 and checks["#15"]["passed"] is False, checks["#15"]["detail"]
    assert checks["#15"]["evidence"]["name"] == "a LayerNorm's rows have mean 0 and standard deviation 1"
    assert "above 1" in checks["#15"]["evidence"]["message"]


CORRECT_NORMS = {
    "PyTorch's form": ("self.gamma * (x - mean) / (var + self.epsilon).sqrt() + self.beta", "Norm(C)"),
    "unbiased std, ε outside the root": ("self.gamma * (x - mean) / (x.std(-1, keepdim=True) + self.epsilon) "
                                         "+ self.beta", "Norm(C)"),
    "unbiased variance, ε inside the root": ("self.gamma * (x - mean) / (x.var(-1, keepdim=True) + self.epsilon)"
                                             ".sqrt() + self.beta", "Norm(C)"),
    "a large ε written in the forward": ("self.gamma * (x - mean) / (var + 1e-2).sqrt() + self.beta", "Norm(C)"),
    "an RMSNorm": ("self.gamma * x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6)", "Norm(C)"),
    "no affine step": ("(x - mean) / (var + 1e-5).sqrt()", "Norm(C)"),
    "nn.LayerNorm without affine": ("x", "nn.LayerNorm(C, elementwise_affine=False)"),
}


@pytest.mark.parametrize("form", sorted(CORRECT_NORMS))
@pytest.mark.parametrize("scale", [3.0, 0.05])
def test_no_correct_norm_is_red_by_the_variance_form_or_the_rows_property(tmp_path, form, scale):
    normed, norm = CORRECT_NORMS[form]
    code, checks = traced(tmp_path, _layer(normed, scale, norm))
    assert code == 0, checks[""]
    for label in ("#15", "#19"):
        assert checks[label]["passed"] is not False, (label, checks[label]["detail"])


# An additive padding mask over positions where a GPT's G12 names a (T, T) causal mask (LEAP's G12 had been
# unrecognised, its inverted mask, B4, unseen): read as a padding mask, and held to the property no correct padding
# mask breaks (trace/reading/padding_mask.py); the overview says which value keeps only where the values tell.
PADDED = '''\
import torch

torch.manual_seed(0)
B, h, T, hs = 2, 2, 6, 8
with torch.no_grad():
    q = torch.randn(B, h, T, hs)  # BREAKPOINT G08
    k = torch.randn(B, h, T, hs)  # BREAKPOINT G09
    v = torch.randn(B, h, T, hs)  # BREAKPOINT G10
    attention_mask = torch.ones(B, T)
    attention_mask[1, 4:] = 0
    mask = MASK
    mask = mask.LAYOUT  # BREAKPOINT G12
    causal = torch.full((T, T), -1e9).triu(1)
    scores = q @ k.transpose(-2, -1) / hs ** 0.5  # BREAKPOINT G11
    masked = scores + causal + mask.reshape(B, 1, 1, T)  # BREAKPOINT G13
'''
KEEP_ADDITIVE = "(1.0 - attention_mask) * -10000.0"


@pytest.mark.parametrize("layout", ["unsqueeze(2)", "unsqueeze(1)"])  # (B, T, 1) and (B, 1, T)
def test_an_additive_padding_mask_over_positions_is_read_as_one(tmp_path, layout):
    code, checks = traced(tmp_path, PADDED.replace("MASK", KEEP_ADDITIVE).replace("LAYOUT", layout))
    assert checks["G12"]["passed"] is True, checks["G12"]["detail"]
    assert checks["G12"]["name"] == "is a padding mask over the positions", checks["G12"]
    assert "kept per batch item: 6, 4 of 6" in checks["G12"]["detail"]
    masks = [v for v in checks[""]["recognised"]["variants"] if v["what"] == "Mask (G12)"]
    assert "diagonal" not in masks[0]["rests_on"], masks


@pytest.mark.parametrize("layout", ["unsqueeze(2)", "unsqueeze(1)"])
def test_an_inverted_padding_mask_blocking_every_position_of_an_item_is_red(tmp_path, layout):
    code, checks = traced(tmp_path, PADDED.replace("MASK", "attention_mask * -10000.0").replace("LAYOUT", layout))
    assert code == 1 and checks["G12"]["passed"] is False, checks["G12"]["detail"]
    evidence = checks["G12"]["evidence"]
    assert evidence["name"] == "no query may block every key" and "batch item(s) 0" in evidence["message"], evidence


def test_a_boolean_padding_mask_is_read_without_its_polarity(tmp_path):
    """Which value keeps is not told by any captured tensor: passed as a padding mask, the overview saying "not
    read", never red."""
    code, checks = traced(tmp_path, PADDED.replace("MASK", "attention_mask.bool()").replace("LAYOUT", "unsqueeze(2)")
                          .replace("mask.reshape(B, 1, 1, T)", "0"))
    assert checks["G12"]["passed"] is True, checks["G12"]["detail"]
    masks = [v for v in checks[""]["recognised"]["variants"] if v["what"] == "Mask (G12)"]
    assert "not read" in masks[0]["variant"], masks


# A residual sum whose two operands the marker names (``# Snapshot #14: x, out1``) on the line that normalises it,
# the sum no variable (DLCV's #14 had been not checkable): read from the input of the LayerNorm the line called
# (trace/reading/sum_normed.py); a pre-norm line, whose norm reads the stream, is not read so.
NAMED_OPERANDS = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, S, C = 2, 6, 16


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = nn.Linear(C, C)
        self.norm1 = nn.LayerNorm(C)

    def forward(self, x):
        out1 = self.attention(x)
        out2 = self.norm1(SUM)  # Snapshot #14: x, out1  # Snapshot #15
        return out2


layer = Layer()
with torch.no_grad():
    y = layer(torch.randn(B, S, C))
'''


def test_a_residual_sum_whose_operands_are_named_is_read_from_the_norm_the_line_called(tmp_path):
    code, checks = traced(tmp_path, NAMED_OPERANDS.replace("SUM", "out1 + x"))
    assert code == 0, checks[""]
    assert checks["#14"]["passed"] is True, checks["#14"]["detail"]
    assert checks["#15"]["passed"] is True, checks["#15"]["detail"]


def test_a_residual_counted_twice_is_named_at_the_named_operands_sum(tmp_path):
    code, checks = traced(tmp_path, NAMED_OPERANDS.replace("SUM", "out1 + x + x"))
    assert checks["#14"]["passed"] is False, checks["#14"]["detail"]
    assert checks["#14"]["evidence"]["name"] == "added twice", checks["#14"]["evidence"]


PRE_NORM_NAMED = NAMED_OPERANDS.replace("        out1 = self.attention(x)\n", "").replace(
    "out2 = self.norm1(SUM)  # Snapshot #14: x, out1  # Snapshot #15",
    "out1 = self.attention(self.norm1(x))  # Snapshot #14: x, out1")


def test_a_pre_norm_line_is_not_read_as_the_sum_its_norm_received(tmp_path):
    code, checks = traced(tmp_path, PRE_NORM_NAMED)
    assert checks["#14"]["passed"] is not False, checks["#14"]["detail"]


# A batch of target sequences one token longer than the decoder's positions (DLCV's #2: a (B, T + 1) target, the
# decoder input cut inside the model, had been unrecognised, "(2, 7) cannot be read as (T)"): read as the first T of
# each (trace/reading/verify.py).
TARGET_CUT = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, S, T1, C, V = 2, 5, 7, 16, 11
embed = nn.Embedding(V, C)
with torch.no_grad():
    ques_b = torch.randint(0, V, (B, S))  # Snapshot #1
    ans_b = torch.randint(0, V, (B, T1))  # Snapshot #2
    q_emb = embed(ques_b)  # Snapshot #4
    a_emb = embed(ans_b)
    dec_in = a_emb[:, :-1]  # Snapshot #20
'''


def test_a_batch_of_targets_one_token_longer_than_the_decoder_reads_is_read_as_its_first_positions(tmp_path):
    code, checks = traced(tmp_path, TARGET_CUT)
    assert code == 0, checks[""]
    assert checks["#1"]["passed"] is True, checks["#1"]["detail"]
    assert checks["#2"]["passed"] is not None, checks["#2"]["detail"]  # read, not unrecognised


# The overview's named dimensions: h = 1 bound where no captured tensor has a heads axis (DLCV's per-head modules,
# LEAP's (B, T, h) scores) was stated as the model's head count; now "not read" (trace/reading/variants.py).
ONE_HEAD_WRITTEN_WITHOUT_ITS_AXIS = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, S, C = 2, 5, 8
wq, wk = nn.Linear(C, C), nn.Linear(C, C)
with torch.no_grad():
    x = torch.randn(B, S, C)  # Snapshot #6
    q = wq(x)  # Snapshot #7
    k = wk(x)  # Snapshot #8
    weights = torch.softmax(q @ k.transpose(-2, -1) / C ** 0.5, dim=-1)  # Snapshot #11
'''


def _dimension_rows(tmp_path) -> dict[str, str]:
    index = (tmp_path / "out" / "t" / "index.md").read_text(encoding="utf-8")
    return {row.split("|")[1].strip(" `"): row.split("|")[3].strip() for row in index.splitlines()
            if row.startswith("| `")}


def test_heads_no_tensor_shows_are_not_read_in_the_named_dimensions(tmp_path):
    code, checks = traced(tmp_path, ONE_HEAD_WRITTEN_WITHOUT_ITS_AXIS)
    assert code == 0, checks[""]
    rows = _dimension_rows(tmp_path)
    assert rows["h"].startswith("not read"), rows


def test_heads_a_tensor_shows_are_read(tmp_path):
    script = ONE_HEAD_WRITTEN_WITHOUT_ITS_AXIS.replace(
        "weights = torch.softmax(q @ k.transpose(-2, -1)", "weights = torch.softmax(q.view(B, S, 2, 4).transpose(1, 2) "
        "@ k.view(B, S, 2, 4).permute(0, 2, 3, 1)").replace("C ** 0.5", "4 ** 0.5")
    code, checks = traced(tmp_path, script)
    assert code == 0, checks[""]
    assert _dimension_rows(tmp_path)["h"] == "2", _dimension_rows(tmp_path)


def test_a_padding_mask_that_masks_nothing_is_no_evidence_of_which_value_keeps(tmp_path):
    """LEAP's correct run: every token real, its (B, T, 1) mask 0 everywhere: the overview had said "−inf = masked",
    a value the mask never holds."""
    code, checks = traced(tmp_path, PADDED.replace("MASK", KEEP_ADDITIVE).replace("LAYOUT", "unsqueeze(2)")
                          .replace("attention_mask[1, 4:] = 0", "pass"))
    assert checks["G12"]["passed"] is True, checks["G12"]["detail"]
    masks = [v for v in checks[""]["recognised"]["variants"] if v["what"] == "Mask (G12)"]
    assert "not read" in masks[0]["variant"] and "inf" not in masks[0]["variant"], masks
