"""Round twenty-one's ViT-side forms (tests/trace_fresh/ROUND21_VIT.md), each built in a script of our own.

A step whose check cannot run for an input no marker shows still breaks, or keeps, the properties it has on its own:
Vitgracer's classifier ends in ``nn.Softmax`` (its logits never leave the ``nn.Sequential``), so S26 "needs snapshot
S25"; its B6, the softmax over the batch, went unseen though its rows then sum to 1 over the batch, not the classes.

Two projections equal value for value (Vitgracer's B3, ``K = self.wv(input)``): the one whose line called a Linear
named for the other is the wrong one, not the later of the two. A projection written as a raw-parameter product on
the statement before the marked one (Apzmie's ``Q = torch.matmul(x, self.W_Q)`` above the head split, ``linear1 =
torch.matmul(x, self.W1) + self.b1`` above the GELU) is read as the Linear it is: q, k and v recomputed from their
own matrices (B5, K = x·W_Q, is "k equals q"), fc1 from its own (B2, the MLP given the stream, is named at S17)."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

SOFTMAX_CLASSIFIER = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
head = nn.Sequential(nn.Linear(16, 10), nn.Softmax(dim=AXIS))
x = torch.randn(2, 16)
with torch.no_grad():
    probs = head(x)  # BREAKPOINT S26
'''


def test_probabilities_over_the_classes_whose_logits_are_not_captured_are_not_checkable_not_red(tmp_path):
    code, checks = traced(tmp_path, SOFTMAX_CLASSIFIER.replace("AXIS", "-1"))
    assert code == 0 and checks["S26"]["passed"] is None, checks["S26"]["detail"]


@pytest.mark.parametrize("axis", ["0", "-2"])
def test_probabilities_over_the_batch_are_red_by_their_own_property_without_their_logits(tmp_path, axis):
    code, checks = traced(tmp_path, SOFTMAX_CLASSIFIER.replace("AXIS", axis))
    assert code == 1 and checks["S26"]["passed"] is False, checks["S26"]["detail"]
    assert checks["S26"]["evidence"]["name"] == "probabilities sum to 1", checks["S26"]["evidence"]
    assert "tested on this step alone" in checks["S26"]["detail"], checks["S26"]["detail"]


ONE_MODULE_PER_HEAD = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)


class Head(nn.Module):
    def __init__(self, d, hs):
        super().__init__()
        self.hs = hs
        self.wq = nn.Linear(d, hs, bias=False)
        self.wk = nn.Linear(d, hs, bias=False)
        self.wv = nn.Linear(d, hs, bias=False)

    def forward(self, x):
        q = self.wq(x)  # BREAKPOINT S09
        k = self.KEYS(x)  # BREAKPOINT S10
        v = self.wv(x)  # BREAKPOINT S11
        scores = q @ k.transpose(-2, -1) / self.hs ** 0.5  # BREAKPOINT S12
        return torch.softmax(scores, dim=-1) @ v


class Block(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.heads = nn.ModuleList([Head(d, d // heads) for _ in range(heads)])
        self.proj = nn.Linear(d, d)

    def forward(self, x):  # BREAKPOINT S08
        h = self.norm1(x)
        return x + self.proj(torch.cat([head(h) for head in self.heads], dim=-1))  # BREAKPOINT S16


with torch.no_grad():
    Block()(torch.randn(2, 5, 16))
'''


def test_keys_from_the_value_linear_are_named_at_the_keys_not_at_the_values_they_equal(tmp_path):
    code, checks = traced(tmp_path, ONE_MODULE_PER_HEAD.replace("KEYS", "wv"))
    assert code == 1 and checks[""]["first_failure"].startswith("S10"), checks[""]
    assert checks["S10"]["evidence"]["name"] == "computed from another tensor", checks["S10"]
    assert "equals v (S11) value for value" in checks["S10"]["detail"], checks["S10"]["detail"]
    assert "`self.wv`" in checks["S10"]["detail"], checks["S10"]["detail"]
    assert checks["S11"]["passed"] is True, checks["S11"]["detail"]


def test_keys_from_their_own_linear_pass(tmp_path):
    code, checks = traced(tmp_path, ONE_MODULE_PER_HEAD.replace("KEYS", "wk"))
    assert code == 0 and all(checks[s]["passed"] for s in ("S09", "S10", "S11", "S12")), checks


RAW_PARAMETERS = '''\
import math

import torch
import torch.nn as nn

torch.manual_seed(0)


class Attention(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.heads, self.hs = heads, d // heads
        self.W_Q = nn.Parameter(torch.randn(d, d) / 4)
        self.W_K = nn.Parameter(torch.randn(d, d) / 4)
        self.W_V = nn.Parameter(torch.randn(d, d) / 4)

    def forward(self, x):
        Q = torch.matmul(x, self.W_Q)
        K = torch.matmul(x, self.KEY_MATRIX)
        V = torch.matmul(x, self.W_V)
        b, n, _ = Q.shape
        Q = Q.view(b, n, self.heads, self.hs).transpose(1, 2)  # BREAKPOINT S09
        K = K.view(b, n, self.heads, self.hs).transpose(1, 2)  # BREAKPOINT S10
        V = V.view(b, n, self.heads, self.hs).transpose(1, 2)  # BREAKPOINT S11
        scores = Q @ K.transpose(-2, -1) / math.sqrt(self.hs)  # BREAKPOINT S12
        return (torch.softmax(scores, dim=-1) @ V).transpose(1, 2).reshape(b, n, -1)


class MLP(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.W1 = nn.Parameter(torch.randn(d, 4 * d) / 4)
        self.b1 = nn.Parameter(torch.randn(4 * d) / 4)
        self.W2 = nn.Parameter(torch.randn(4 * d, d) / 8)
        self.gelu = nn.GELU()

    def forward(self, x):
        linear1 = torch.matmul(x, self.W1) + self.b1
        gelu = self.gelu(linear1)  # BREAKPOINT S17
        return torch.matmul(gelu, self.W2)


class Block(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn, self.mlp = Attention(d), MLP(d)

    def forward(self, x):  # BREAKPOINT S08
        h = x + self.attn(self.norm1(x))  # BREAKPOINT S16
        return h + self.mlp(MLP_INPUT)  # BREAKPOINT S19


with torch.no_grad():
    Block()(torch.randn(2, 5, 16))
'''


def raw_parameters(keys: str = "W_K", mlp_input: str = "self.norm2(h)") -> str:
    return RAW_PARAMETERS.replace("KEY_MATRIX", keys).replace("MLP_INPUT", mlp_input)


def test_raw_parameter_products_on_the_statement_before_are_recomputed_from_their_own_matrices(tmp_path):
    code, checks = traced(tmp_path, raw_parameters())
    assert code == 0, checks[""]
    for label, matrix in (("S09", "W_Q"), ("S10", "W_K"), ("S11", "W_V")):
        assert checks[label]["passed"] is True, checks[label]["detail"]
        assert f"product `x @ self.{matrix}` before it" in checks[label]["detail"], checks[label]["detail"]
    assert checks["S17"]["passed"] is True, checks["S17"]["detail"]
    assert "recomputed GELU(x·W₁ᵀ + b₁)" in checks["S17"]["detail"], checks["S17"]["detail"]


def test_keys_projected_with_the_query_matrix_on_the_statement_before_are_k_equals_q(tmp_path):
    code, checks = traced(tmp_path, raw_parameters(keys="W_Q"))
    assert code == 1 and checks[""]["first_failure"].startswith("S10"), checks[""]
    assert checks["S10"]["evidence"]["name"] == "computed from another tensor", checks["S10"]
    assert "equals Q (S09) value for value" in checks["S10"]["detail"], checks["S10"]["detail"]


def test_a_raw_parameter_mlp_given_the_stream_is_named_at_its_activation(tmp_path):
    code, checks = traced(tmp_path, raw_parameters(mlp_input="h"))
    assert code == 1 and checks[""]["first_failure"].startswith("S17"), checks[""]
    assert checks["S17"]["passed"] is False and "was given h (S16) itself" in checks["S17"]["detail"], checks["S17"]
