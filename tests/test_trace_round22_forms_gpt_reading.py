"""Round twenty-two's GPT-side forms the checks did not read (tests/trace_fresh/ROUND22_GPT.md, "What the checks
missed"), each held by a script of our own:

- Per-head projections written as an ``einsum`` of the stream with a raw (h, d, C) parameter (picoclvr's MyGPT,
  ``torch.einsum("ntc,hdc->nhtd", x, self.w_q)``): read as the Linear the einsum is (trace/reading/einsum_products.py),
  so Q, K and V are recomputed from their parameters and the LayerNorm's output; the queries made with the keys'
  parameter are then "computed from another tensor" at Q, by the parameter's name.
- A SwiGLU whose fused gate Linear is split on the line G20 marks, the gate half activated by a swish of the script's
  own on an unmarked line, the product marked at G21 (modern_llm): G21 read as an activation of one half of the fused
  Linear times its other half (checks/gated.py ``GatedOfLinear``); the swish applied to the value half, which then
  multiplies itself, is "the gate applied to the wrong half"."""

from __future__ import annotations

import torch

from tests.conftest import trace_source as traced
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.einsum_products import einsum_operands, with_einsums

EINSUM_HEADS = '''\
import math
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C, H, DK = 2, 8, 32, 4, 4


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.w_q = nn.Parameter(torch.randn(H, DK, C) / C ** 0.5)
        self.w_k = nn.Parameter(torch.randn(H, DK, C) / C ** 0.5)
        self.w_v = nn.Parameter(torch.randn(H, C // H, C) / C ** 0.5)
        self.w_o = nn.Parameter(torch.randn(C, C) / C ** 0.5)
        self.ln = nn.LayerNorm(C)

    def forward(self, x):
        x = self.ln(x)  # BREAKPOINT G06
        q = torch.einsum("ntc,hdc->nhtd", x, self.QUERIES)  # BREAKPOINT G08
        k = torch.einsum("ntc,hdc->nhtd", x, self.w_k)  # BREAKPOINT G09
        v = torch.einsum("ntc,hdc->nhtd", x, self.w_v)  # BREAKPOINT G10
        a = torch.einsum("nhtd,nhsd->nhts", q, k) / math.sqrt(DK)  # BREAKPOINT G11
        a = a.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))  # BREAKPOINT G13
        a = a.softmax(dim=3)  # BREAKPOINT G14
        y = torch.einsum("nhts,nhsd->nthd", a, v).flatten(2)  # BREAKPOINT G16
        return y @ self.w_o  # BREAKPOINT G17


with torch.no_grad():
    Attention().eval()(torch.randn(B, T, C))
'''


def test_per_head_einsum_projections_with_a_raw_parameter_are_recomputed_from_it(tmp_path):
    code, checks = traced(tmp_path, EINSUM_HEADS.replace("QUERIES", "w_q"))
    assert code == 0, {label: check["detail"] for label, check in checks.items() if label}
    for label, parameter in (("G08", "w_q"), ("G09", "w_k"), ("G10", "w_v")):
        assert checks[label]["passed"] is True, checks[label]["detail"]
        assert f"`einsum('ntc,hdc->nhtd', x, self.{parameter})`" in checks[label]["detail"]
        assert "split into 4 heads" in checks[label]["detail"]


def test_queries_made_with_the_keys_parameter_are_named_at_the_queries(tmp_path):
    code, checks = traced(tmp_path, EINSUM_HEADS.replace("QUERIES", "w_k"))
    assert code == 1
    assert checks[""]["first_failure"].startswith("G08")
    assert checks["G08"]["evidence"]["name"] == "computed from another tensor"
    assert "`self.w_k`, by its name" in checks["G08"]["detail"]


def _read(name: str, tensor: torch.Tensor) -> ModuleCall:
    return ModuleCall(name, ModuleKind.READ, 1, [], [], {"weight": tensor}, {})


def _local(name: str, tensor: torch.Tensor) -> ModuleCall:
    return ModuleCall(name, ModuleKind.LOCAL, 1, [], [tensor], {}, {})


def test_an_einsum_is_a_linear_only_where_the_lines_own_equation_reproduces_what_it_made():
    torch.manual_seed(0)
    x, weight = torch.randn(2, 8, 32), torch.randn(4, 4, 32)
    calls = [_local("x", x), _read("self.w_q", weight)]
    made = torch.einsum("ntc,hdc->nhtd", x, weight)
    linear = with_einsums(calls, [made], (("ntc,hdc->nhtd", "self.w_q", 1),))[-1]
    assert linear.kind == ModuleKind.LINEAR and linear.params["weight"].shape == (16, 32)
    # the Linear's output, split into the parameter's heads, is what the line made
    assert torch.allclose(linear.outputs[0].view(2, 8, 4, 4).transpose(1, 2), made, atol=1e-5)
    assert len(with_einsums(calls, [made + 1], (("ntc,hdc->nhtd", "self.w_q", 1),))) == 2  # reproduces nothing
    batched = (("ntc,ntc->nt", "self.w_q", 1),)  # no parameter axis apart from the input's: no Linear
    assert len(with_einsums([_local("x", x), _read("self.w_q", x)], [(x * x).sum(-1)], batched)) == 2


def test_the_einsums_read_are_those_of_a_local_with_a_self_attribute():
    source = "class A:\n    def f(self, x, y):\n        q = torch.einsum('ntc,hdc->nhtd', x, self.w_q)\n" \
             "        a = torch.einsum('nhtd,nhsd->nhts', x, y)\n"
    assert einsum_operands(source, 3, 3) == (("ntc,hdc->nhtd", "self.w_q", 1),)
    assert einsum_operands(source, 4, 4) == ()


SWIGLU = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C, M = 2, 6, 16, 32


def _swish(x):
    return x * torch.sigmoid(x)


class SwiGLU(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(C, 2 * M)
        self.proj = nn.Linear(M, C)

    def forward(self, x):
        gate_out, value = self.gate(x).chunk(2, dim=-1)  # BREAKPOINT G20 gate_out
        activated = ACTIVATED
        gated = activated * value  # BREAKPOINT G21
        return self.proj(gated)  # BREAKPOINT G22


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm, self.mlp = nn.LayerNorm(C), SwiGLU()

    def forward(self, x):
        h = self.norm(x)  # BREAKPOINT G19
        return x + self.mlp(h)


with torch.no_grad():
    nn.Sequential(Block(), Block()).eval()(torch.randn(B, T, C))
'''


def test_a_swiglu_activated_on_an_unmarked_line_from_a_fused_linears_half_is_read_as_a_gated_mlp(tmp_path):
    code, checks = traced(tmp_path, SWIGLU.replace("ACTIVATED", "_swish(gate_out)"))
    assert code == 0, {label: check["detail"] for label, check in checks.items() if label}
    assert checks["G21"]["passed"] is True, checks["G21"]["detail"]
    assert "SiLU of one half of the fused fc1(input) × its other half" in checks["G21"]["name"]


def test_the_swish_of_the_value_half_times_itself_is_the_gate_applied_to_the_wrong_half(tmp_path):
    code, checks = traced(tmp_path, SWIGLU.replace("ACTIVATED", "_swish(value)"))
    assert code == 1 and checks[""]["first_failure"].startswith("G21")
    assert checks["G21"]["evidence"]["name"] == "the gate applied to the wrong half", checks["G21"]["detail"]
    assert "SiLU of fc1(input)'s second half times that same half" in checks["G21"]["detail"]


def test_the_two_halves_multiplied_without_the_swish_are_the_gates_activation_left_out(tmp_path):
    code, checks = traced(tmp_path, SWIGLU.replace("ACTIVATED", "gate_out"))
    assert code == 1
    assert checks["G21"]["evidence"]["name"] == "the gate's activation left out", checks["G21"]["detail"]
