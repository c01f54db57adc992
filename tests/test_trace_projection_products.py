"""A projection written as a product with a raw parameter matrix on the marked line (issue 40 point 4; round five's
nerminnuraydogan ViT, tests/trace_fresh/ROUND5_VIT.md: ``torch.matmul(x, self.W)`` for the patch projection and the
output projection, one module per head, the heads joined by ``torch.cat``) is read as the Linear call it is
(generator/trace/reading/products.py): S04 and S15 were not checkable ("the model's weights … which a trace does not
capture") and are checked now from the parameter the line read, S15 with the per-head context among the heads the line
joined; a product that took another tensor than the step that should feed it is named so. Tiny scripts of our own and
synthetic tensors, no upstream file."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.conftest import trace_source as traced
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.products import PRODUCT, with_products

SCRIPT = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
B, P, Ch, IMG, C, H = 2, 4, 3, 8, 16, 2
N, HS = (IMG // P) ** 2, C // H


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.W = nn.Parameter(torch.randn(C, 3 * HS) / C ** 0.5)

    def forward(self, x):
        qkv = torch.matmul(x, self.W)
        q = qkv[:, :, :HS]  # BREAKPOINT S09
        k = qkv[:, :, HS:2 * HS]  # BREAKPOINT S10
        v = qkv[:, :, 2 * HS:]  # BREAKPOINT S11
        scores = torch.matmul(q, k.transpose(-2, -1)) / HS ** 0.5  # BREAKPOINT S12
        probs = F.softmax(scores, dim=-1)  # BREAKPOINT S13
        ctx = torch.matmul(probs, v)  # BREAKPOINT S14
        return ctx


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([Head() for _ in range(H)])
        self.W = nn.Parameter(torch.randn(C, C) / C ** 0.5)
        self.b = nn.Parameter(torch.randn(C) / 10)

    def forward(self, x):
        Z = torch.cat([head(x) for head in self.heads], -1)
        out = {projection}  # BREAKPOINT S15
        return out


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.W1, self.b1 = nn.Parameter(torch.randn(C, 4 * C) / C ** 0.5), nn.Parameter(torch.randn(4 * C) / 10)
        self.W2, self.b2 = nn.Parameter(torch.randn(4 * C, C) / (4 * C) ** 0.5), nn.Parameter(torch.randn(C) / 10)

    def forward(self, x):
        pre = torch.matmul(x, self.W1) + self.b1
        h = F.gelu(pre)  # BREAKPOINT S17
        return torch.matmul({hidden}, self.W2) + self.b2  # BREAKPOINT S18


class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.E = nn.Parameter(torch.randn(Ch * P * P, C) / (Ch * P * P) ** 0.5)
        self.ln = nn.LayerNorm(C)
        self.attn, self.ln2, self.mlp = Attention(), nn.LayerNorm(C), MLP()

    def forward(self, image):
        patches = image.unfold(2, P, P).unfold(3, P, P).permute(0, 2, 3, 1, 4, 5).reshape(B, N, Ch * P * P)  # BREAKPOINT S03
        scaled = patches * 1.0
        embedded = torch.matmul(patches, self.E)  # BREAKPOINT S04
        return self.mlp(self.ln2(self.attn(self.ln(embedded))))


model = ViT().eval()
with torch.no_grad():
    model(torch.randn(B, Ch, IMG, IMG))
'''


@pytest.mark.parametrize("projection, written", [
    ("torch.matmul(Z, self.W) + self.b", "x @ self.W + self.b"),
    ("Z @ self.W.T + self.b", "x @ self.Wᵀ + self.b"),          # the weight stored (out, in), as nn.Linear stores it
    ("F.linear(Z, self.W, self.b)", "x @ self.Wᵀ + self.b"),
    ("torch.matmul(Z, self.W)", "x @ self.W"),                   # no bias
])
def test_a_product_with_a_raw_parameter_is_read_as_the_projection_it_is(tmp_path: Path, projection: str,
                                                                       written: str):
    code, checks = traced(tmp_path, SCRIPT.format(projection=projection, hidden="h"))
    assert code == 0, checks[""]
    assert checks["S04"]["passed"] is True and "`x @ self.E`" in checks["S04"]["detail"]
    assert checks["S15"]["passed"] is True and f"`{written}`" in checks["S15"]["detail"]
    # one module per head: the heads the line joined hold the per-head context S14 captured
    assert "the heads side by side, one of them the context" in checks["S15"]["name"]
    assert checks["S18"]["passed"] is True


def test_a_product_that_took_another_tensor_than_its_step_is_named_at_that_step(tmp_path: Path):
    code, checks = traced(tmp_path, SCRIPT.format(projection="torch.matmul(Z, self.W) + self.b", hidden="pre"))
    assert code == 1
    assert checks["S18"]["passed"] is False
    assert checks["S18"]["evidence"]["name"] == "computed from another tensor"
    assert checks[""]["first_failure"].startswith("S18")


def _read(name: str, tensor: torch.Tensor) -> ModuleCall:
    return ModuleCall(name, ModuleKind.READ, 1, [], [], {"weight": tensor}, {})


def _local(name: str, tensor: torch.Tensor) -> ModuleCall:
    return ModuleCall(name, ModuleKind.LOCAL, 0, [], [tensor], {}, {})


X, W, BIAS = torch.randn(2, 5, 8), torch.randn(8, 6), torch.randn(6)


@pytest.mark.parametrize("step, bias", [
    (X @ W, None),
    (X @ W + BIAS, BIAS),
    ((X @ W + BIAS).reshape(2, 5, 2, 3).transpose(1, 2), BIAS),  # viewed into heads on the same line
])
def test_the_product_call_has_the_weight_as_a_linear_stores_it_and_its_input(step, bias):
    calls = [_local("x", X), _read("self.W", W), _read("self.b", BIAS)]
    found = [c for c in with_products(calls, [step]) if c.kind == ModuleKind.LINEAR]
    assert len(found) == 1
    call = found[0]
    assert torch.equal(call.params["weight"], W.T) and call.inputs[0] is X
    assert (call.params["bias"] is None) == (bias is None)
    assert call.attrs[PRODUCT].startswith("x @ self.W")


@pytest.mark.parametrize("step", [
    2 * (X @ W),                  # the line did more than the product
    torch.relu(X @ W + BIAS),     # an activation on the same line: not a Linear's output
    torch.randn(2, 5, 6),         # something else of the same shape
])
def test_no_call_is_made_up_where_no_product_reproduces_what_the_line_made(step):
    calls = [_local("x", X), _read("self.W", W), _read("self.b", BIAS)]
    assert with_products(calls, [step]) == tuple(calls)
