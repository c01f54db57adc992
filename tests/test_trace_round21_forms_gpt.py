"""Round twenty-one's GPT-side forms (tests/trace_fresh/ROUND21_GPT.md), each built in a script of our own; both were
false reds on correct code nobody here had traced.

- DeepNorm (koayon): a post-norm sum whose stream is scaled, LayerNorm(α·x + sublayer(x)). The block's output is read
  as its LayerNorm of its operands each scaled by a fitted constant (trace/reading/bound_run.py); a LayerNorm whose
  input is a step no marker captured, only derived as x + y, is no evidence of "another tensor" (checks/evidence.py).
- A layer calling one attention class three times (Learned-Attention: a mask predictor, then two sub-blocks): the
  hits of the attention's lines pair with the layers wrongly, and a residual sum that fits another hit of the same
  step is a pairing the reading missed, not "computed from another tensor".

And two planted bugs the checks did not name (fix21gpt), each held the same way:

- A context that is its own values (koayon B3: a named-axis einsum labelling the values by the query axis sums each
  row's weights to 1 and drops them): G15 equals V (G10) row for row, the bug form "the weights not applied: the
  context equals V" (checks/context_heads.py), never fitted where any weights would give V back (one position, or
  value rows all alike).
- K projected with the queries' Linear on its own split line (piyushsinghoffice B5, `self.q_proj(k)`): each split
  re-joins the Linear its own line called; the q and k lines calling one module is "computed from another tensor",
  named at the split (#12, trace/reading/shared_projection.py)."""

from __future__ import annotations

import pytest
import torch

from tests.conftest import trace_source as traced
from transformer_trace.checks import ContextHeads
from transformer_trace.sources import Ref, TensorDict

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


CONTEXT_EINSUM = '''\
import math
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C, H = 2, 10, 32, 4


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)

    def forward(self, x):
        q = self.q_proj(x).view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G08
        k = self.k_proj(x).view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G09
        v = self.v_proj(x).view(B, T, H, C // H).transpose(1, 2)  # BREAKPOINT G10
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // H)  # BREAKPOINT G11
        mask = torch.tril(torch.ones(T, T)).view(1, 1, T, T)  # BREAKPOINT G12
        masked = scores.masked_fill(mask == 0, float("-inf"))  # BREAKPOINT G13
        probs = torch.softmax(masked, dim=-1)  # BREAKPOINT G14
        context = torch.einsum(LABELS, probs, v)  # BREAKPOINT G15
        return context


with torch.no_grad():
    Attention().eval()(torch.randn(B, T, C))
'''

VALUES_ALONE = "the weights not applied: the context equals V"


def test_an_einsum_context_over_the_keys_passes(tmp_path):
    code, checks = traced(tmp_path, CONTEXT_EINSUM.replace("LABELS", '"bhqk,bhkd->bhqd"'))
    assert code == 0 and checks["G15"]["passed"] is True, checks["G15"]["detail"]


def test_an_einsum_context_that_labels_the_values_by_the_query_axis_is_named_at_g15(tmp_path):
    code, checks = traced(tmp_path, CONTEXT_EINSUM.replace("LABELS", '"bhqk,bhqd->bhqd"'))
    assert code == 1 and checks[""]["first_failure"].startswith("G15"), checks[""]
    assert checks["G15"]["evidence"]["name"] == VALUES_ALONE, checks["G15"]


def _context_equal_to_its_values(positions: int, alike: bool) -> tuple[ContextHeads, dict[str, torch.Tensor]]:
    """A context equal to its values whose check fails (weights that do not sum to 1: twice the causal softmax)."""
    torch.manual_seed(0)
    v = torch.randn(1, 2, 1 if alike else positions, 4).expand(1, 2, positions, 4).contiguous()
    probs = 2 * torch.softmax(torch.randn(1, 2, positions, positions).masked_fill(
        torch.ones(positions, positions).triu(1).bool(), float("-inf")), dim=-1)
    return ContextHeads(out=Ref("context"), probs=Ref("probs"), v_heads=Ref("v")), {"context": v.clone(), "v": v,
                                                                                        "probs": probs}


@pytest.mark.parametrize(("positions", "alike"), [(1, False), (6, True)], ids=["one position", "value rows alike"])
def test_a_context_equal_to_values_that_any_weights_give_back_is_not_named_so(positions, alike):
    check, tensors = _context_equal_to_its_values(positions, alike)
    result = check.run(TensorDict(tensors))
    assert result.status == "failed" and result.evidence is None, result.detail  # unrecognised, not a bug


def test_a_context_equal_to_values_whose_rows_differ_is_named_so():
    check, tensors = _context_equal_to_its_values(6, alike=False)
    result = check.run(TensorDict(tensors))
    assert result.evidence is not None and result.evidence.name == VALUES_ALONE, result.detail


SPLIT_LINES = '''\
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
B, S, C, H = 2, 5, 16, 4


class MultiHeadAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.d_k = C // H
        self.q_proj, self.k_proj, self.v_proj = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)

    def forward(self, q, k, v):
        q = self.q_proj(q).view(B, -1, H, self.d_k).transpose(1, 2)  # Snapshot #12
        k = self.KEYS(k).view(B, -1, H, self.d_k).transpose(1, 2)  # Snapshot #12
        v = self.v_proj(v).view(B, -1, H, self.d_k).transpose(1, 2)  # Snapshot #12
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.d_k)  # Snapshot #10
        attn = F.softmax(scores, dim=-1)  # Snapshot #11
        return (attn @ v).transpose(1, 2).contiguous().view(B, -1, C)  # Snapshot #13


attention = MultiHeadAttention().eval()
with torch.no_grad():
    x = torch.randn(B, S, C)
    attention(x, x, x)
'''


def test_q_k_and_v_split_on_their_own_lines_each_by_its_own_linear_pass(tmp_path):
    code, checks = traced(tmp_path, SPLIT_LINES.replace("KEYS", "k_proj"))
    assert code == 0 and checks["#12"]["passed"] is True, checks["#12"]["detail"]


def test_keys_split_from_the_queries_linear_on_their_own_line_are_named_at_the_split(tmp_path):
    code, checks = traced(tmp_path, SPLIT_LINES.replace("KEYS", "q_proj"))
    assert code == 1 and checks[""]["first_failure"].startswith("#12"), checks[""]
    assert checks["#12"]["evidence"]["name"] == "computed from another tensor", checks["#12"]
    assert "your keys hold the queries' values" in checks["#12"]["evidence"]["message"], checks["#12"]


def test_q_k_and_v_from_clones_of_one_untrained_linear_pass_though_their_parts_are_equal(tmp_path):
    # round twenty's Offline-translation: `clones(nn.Linear(d, d), 4)` deep-copies one Linear, so untrained q, k and v
    # of one input are equal; the values cannot tell which Linear made which part: no evidence of a shared one
    cloned = SPLIT_LINES.replace("KEYS", "k_proj").replace(
        "self.q_proj, self.k_proj, self.v_proj = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)",
        "self.q_proj, self.k_proj, self.v_proj = (copy.deepcopy(one) for one in [nn.Linear(C, C)] * 3)").replace(
        "import math\n", "import copy\nimport math\n")
    code, checks = traced(tmp_path, cloned)
    assert code == 0 and checks["#12"]["passed"] is True, checks["#12"]["detail"]
