"""Round twenty-one's GPT-side forms (tests/trace_fresh/ROUND21_GPT.md), each built in a script of our own; both were
false reds on correct code nobody here had traced.

- DeepNorm (koayon): a post-norm sum whose stream is scaled, LayerNorm(α·x + sublayer(x)). The block's output is read
  as its LayerNorm of its operands each scaled by a fitted constant (trace/reading/bound_run.py); a LayerNorm whose
  input is a step no marker captured, only derived as x + y, is no evidence of "another tensor" (checks/evidence.py).
- A layer calling one attention class three times (Learned-Attention: a mask predictor, then two sub-blocks): the
  hits of the attention's lines pair with the layers wrongly, and a residual sum that fits another hit of the same
  step is a pairing the reading missed, not "computed from another tensor"."""

from __future__ import annotations

from tests.conftest import trace_source as traced

DEEPNORM = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C, ALPHA = 2, 6, 16, 2 ** 0.5


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj, self.fc1, self.fc2 = nn.Linear(C, C), nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)

    def forward(self, x):  # BREAKPOINT G05 x
        y = self.proj(x)  # BREAKPOINT G17
        x = self.ln1(x * ALPHA + y)  # BREAKPOINT G19
        y = self.fc2(torch.nn.functional.gelu(self.fc1(x)))  # BREAKPOINT G22
        x = self.ln2(STREAM * ALPHA + y)  # BREAKPOINT G24
        return x


blocks = nn.Sequential(Block(), Block()).eval()
with torch.no_grad():
    blocks(torch.randn(B, T, C))
'''


def test_a_deepnorm_block_whose_stream_is_scaled_gets_no_red_verdict(tmp_path):
    code, checks = traced(tmp_path, DEEPNORM.replace("STREAM", "x"))
    assert code == 0, {label: check["detail"] for label, check in checks.items() if label}
    assert checks["G24"]["passed"] is True, checks["G24"]["detail"]
    assert "1.414·x (G19) + 1·y (G22): the operands summed, each scaled by a constant" in checks["G24"]["detail"]


def test_a_deepnorm_block_that_drops_its_stream_is_red(tmp_path):
    code, checks = traced(tmp_path, DEEPNORM.replace("STREAM", "y"))
    assert code == 1 and checks["G24"]["passed"] is False, checks["G24"]["detail"]


THREE_CALLS = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C = 2, 6, 16


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.w_o = nn.Linear(C, C)

    def forward(self, x):
        return self.w_o(x)  # BREAKPOINT G17


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.predictor, self.first, self.second = Attention(), Attention(), Attention()

    def forward(self, x):  # BREAKPOINT G05 x
        gate = torch.sigmoid(self.predictor(x))
        x = x + self.first(x) * gate.mean()  # BREAKPOINT G18
        x = x + self.second(x)  # BREAKPOINT G18
        return x


layers = nn.Sequential(Layer(), Layer()).eval()
with torch.no_grad():
    layers(torch.randn(B, T, C))
'''


def test_a_layer_calling_its_attention_three_times_gets_no_red_verdict_from_the_pairing_of_its_hits(tmp_path):
    code, checks = traced(tmp_path, THREE_CALLS)
    assert code == 0, {label: check["detail"] for label, check in checks.items() if label}
    assert checks["G18"]["passed"] is not False, checks["G18"]["detail"]
