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
