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
