"""A classification head of several Linear layers called on one line (nerminnuraydogan's Linear–Tanh–Linear
pre-training head, tests/trace_fresh/ROUND5_VIT.md S25): the catalogue claims one Linear of the pooled token, and the
last layer applied to it fitted no shape (unrecognised, with PyTorch's exception as the message). The line's layers are
read as a chain, the activation between each two fitted from the family, and the chain checked from the pooled token:
a head that read another token is named."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import trace_source as traced
from transformer_trace.checks.layers import ACTIVATIONS, fitted_activation

LAYERED_HEAD = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N1, C, M, K = 4, 5, 16, 48, 10


class MLPHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(C, M), nn.{activation}(), nn.Linear(M, K))

    def forward(self, x):
        return self.layers(x)


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp_head = MLPHead()

    def forward(self, x):
        cls = x[:, 0]  # BREAKPOINT S24
        y = self.mlp_head(cls)  # BREAKPOINT S25
        return y


with torch.no_grad():
    Head()(torch.randn(B, N1, C))
'''


@pytest.mark.parametrize("activation", ["Tanh", "GELU", "ReLU"])
def test_a_head_of_layers_on_one_line_is_checked_as_their_chain(tmp_path, activation):
    code, checks = traced(tmp_path, LAYERED_HEAD.format(activation=activation))
    assert code == 0, checks[""]
    assert checks["S25"]["passed"] is True, checks["S25"]
    assert f"Linear–{activation}–Linear" in checks["S25"]["detail"], checks["S25"]


def test_a_layered_head_that_read_another_token_is_named(tmp_path):
    code, checks = traced(tmp_path, LAYERED_HEAD.format(activation="Tanh").replace(
        "self.mlp_head(cls)", "self.mlp_head(x[:, 1])"))
    assert code == 1, checks[""]
    assert checks[""]["first_failure"].startswith("S25"), checks[""]
    assert checks["S25"]["evidence"]["name"] == "computed from another tensor", checks["S25"]


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_the_activation_between_two_layers_is_fitted_from_the_family(name):
    before = torch.randn(4, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    assert fitted_activation(before, ACTIVATIONS[name](before)) == name
    assert fitted_activation(before, before * 3.0 + 1.0) is None
