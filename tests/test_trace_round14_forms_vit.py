"""Round fourteen's fresh ViTs (tests/trace_fresh/ROUND14_VIT.md): the forms behind what `trace` got wrong or left
unread on their first result, each held by a tiny script of our own (no upstream file).

- a gated MLP whose hidden layer is marked on the line that applies the gate's activation and multiplies the two
  Linears' outputs itself (`x = F.silu(self.fc1(x)) * self.fc3(x)`, AIMv2's SwiGLU): no factor is a local the line
  read, and the hidden layer was failed as "not a GELU's output" (a false red). It is read as the gated family from
  the two Linears the line called: the activation of one times the other passes (SwiGLU, GeGLU), and where the
  product is of the two Linears' raw outputs the step fails with the bug form "the gate's activation left out".
- a model that runs its embedding once while it is built (CCT's tokenizer measuring its sequence length on a dummy
  image of batch 1): that hit came before the script's input was made, and the patch-embedding page read it (shape
  (1, N, C): unrecognised, and a planted bug in the embedding went unseen). A step's hits made before the first hit of
  the script's input step are a dry run, not the forward pass: the report reads the hits after it, and says so (the
  child copies the module calls of a step outside the layer loop up to its second hit, so that the page has them).
- sequence pooling (CCT's `seq_pool`: a Linear scores each row of the final sequence, a softmax over the rows weighs
  them, `matmul` sums them) was unrecognised at S24; it is read as a third pooled form beside the class row and the
  mean, the Linear taken from the line's call, and the softmax over the scores' own axis (every weight 1: the rows
  summed) is the bug form "softmax over the wrong axis".
- an encoder's `F.scaled_dot_product_attention(..., is_causal=True)` left its context unrecognised; the fused context
  check now tries the bug form "a causal mask where none belongs" (every later key masked out).
"""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

# a pre-norm block with a SwiGLU MLP: the gate's SiLU and the product on one line, neither factor named
SWIGLU = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
B, N, C, H, M = 2, 9, 16, 4, 24


class SwiGLU(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(C, M)
        self.fc2 = nn.Linear(M, C)
        self.fc3 = nn.Linear(C, M)

    def forward(self, x):
        x = F.silu(self.fc1(x)) * self.fc3(x)  # BREAKPOINT S17
        x = self.fc2(x)  # BREAKPOINT S18
        return x


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm_1 = nn.LayerNorm(C)
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.norm_2 = nn.LayerNorm(C)
        self.mlp = SwiGLU()

    def attend(self, x):
        q, k, v = self.qkv(x).reshape(B, N, 3, H, C // H).permute(2, 0, 3, 1, 4).unbind(0)
        return self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, N, C))

    def forward(self, x):  # BREAKPOINT S08
        x = x + self.attend(self.norm_1(x))  # BREAKPOINT S16
        x = x + self.mlp(self.norm_2(x))  # BREAKPOINT S19
        return x  # BREAKPOINT S20


with torch.no_grad():
    out = nn.Sequential(Block(), Block()).eval()(torch.randn(B, N, C))
'''

GATE = "x = F.silu(self.fc1(x)) * self.fc3(x)"


@pytest.mark.parametrize("gate", [GATE, "x = self.fc3(x) * F.gelu(self.fc1(x))"])
def test_a_gated_hidden_layer_made_from_two_linears_on_its_line_passes(tmp_path, gate):
    code, checks = traced(tmp_path, SWIGLU.replace(GATE, gate))
    assert code == 0 and checks["S17"]["passed"] is True and "gated MLP" in checks["S17"]["name"], checks["S17"]
    assert checks["S18"]["passed"] is True, checks["S18"]


def test_a_gated_hidden_layer_without_the_gates_activation_is_named_there(tmp_path):
    code, checks = traced(tmp_path, SWIGLU.replace(GATE, "x = self.fc1(x) * self.fc3(x)"))
    assert code == 1 and checks[""]["first_failure"].startswith("S17"), checks[""]
    assert checks["S17"]["evidence"]["name"] == "the gate's activation left out", checks["S17"]


def test_a_hidden_layer_of_two_linears_combined_otherwise_is_not_called_a_bug(tmp_path):
    # a sum of the two Linears: no gated form, no bug form of the family; only GELU's range (a property) may judge it
    code, checks = traced(tmp_path, SWIGLU.replace(GATE, "x = torch.tanh(self.fc1(x)) + self.fc3(x)"))
    assert (checks["S17"].get("evidence") or {}).get("name") != "the gate's activation left out", checks["S17"]


# a model whose tokenizer runs once on a dummy image while the model is built (to size its position table)
DRY_RUN = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
C = 16


class Tokenizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, C, kernel_size=4, stride=4)

    def sequence_length(self):
        return self.forward(torch.zeros(1, 3, 16, 16)).shape[1]

    def forward(self, x):
        return self.conv(x).flatten(2).transpose(-2, -1)  # BREAKPOINT S04


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.tokenizer = Tokenizer()
        self.positions = nn.Parameter(torch.randn(1, self.tokenizer.sequence_length(), C))

    def forward(self, img):
        x = self.tokenizer(img)
        x = x + self.positions  # BREAKPOINT S07
        return x


model = Model().eval()
img = torch.randn(2, 3, 16, 16)  # BREAKPOINT S01
with torch.no_grad():
    out = model(img)
'''

FLATTEN = "return self.conv(x).flatten(2).transpose(-2, -1)"


def test_a_dry_run_made_while_the_model_is_built_is_not_read_as_the_forward_pass(tmp_path):
    code, checks = traced(tmp_path, DRY_RUN)
    assert code == 0 and checks["S04"]["passed"] is True, checks["S04"]
    assert checks["S07"]["passed"] is True, checks["S07"]
    notices = " ".join(str(notice) for notice in checks[""].get("notices", []))
    assert code == 0 and checks[""]["counts"]["failed"] == 0, (checks[""], notices)


def test_a_bug_in_an_embedding_that_also_ran_while_the_model_was_built_is_named_at_it(tmp_path):
    bug = "return self.conv(x).flatten(2).view(x.shape[0], -1, C)"
    code, checks = traced(tmp_path, DRY_RUN.replace(FLATTEN, bug))
    assert code == 1 and checks[""]["first_failure"].startswith("S04"), checks[""]


# a model without a class token pooling its final sequence by a softmax-weighted sum of the rows (CCT's seq_pool), and
# an encoder attending through F.scaled_dot_product_attention, whose causal flag must stay off
SEQ_POOL = '''\\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
B, N, C, H = 2, 9, 16, 4


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.norm = nn.LayerNorm(C)
        self.attention_pool = nn.Linear(C, 1)
        self.fc = nn.Linear(C, 10)

    def forward(self, x):
        q, k, v = self.qkv(x).reshape(B, N, 3, H, C // H).permute(2, 0, 3, 1, 4).unbind(0)  # BREAKPOINT S09, S10, S11
        ctx = F.scaled_dot_product_attention(q, k, v, is_causal=False)  # BREAKPOINT S14
        x = x + self.proj(ctx.transpose(1, 2).reshape(B, N, C))
        x = self.norm(x)  # BREAKPOINT S23
        x = torch.matmul(F.softmax(self.attention_pool(x), dim=1).transpose(-1, -2), x).squeeze(-2)  # BREAKPOINT S24
        x = self.fc(x)  # BREAKPOINT S25
        return x


with torch.no_grad():
    out = Model().eval()(torch.randn(B, N, C))
'''

POOL = "F.softmax(self.attention_pool(x), dim=1)"


def test_sequence_pooling_by_a_softmax_over_the_rows_passes(tmp_path):
    code, checks = traced(tmp_path, SEQ_POOL)
    assert code == 0 and checks["S24"]["passed"] is True and "sequence pooling" in checks["S24"]["name"], checks["S24"]
    assert checks["S14"]["passed"] is True, checks["S14"]


def test_sequence_pooling_with_its_softmax_over_the_scores_axis_is_named_there(tmp_path):
    code, checks = traced(tmp_path, SEQ_POOL.replace(POOL, "F.softmax(self.attention_pool(x), dim=-1)"))
    assert code == 1 and checks[""]["first_failure"].startswith("S24"), checks[""]
    assert checks["S24"]["evidence"]["name"] == "softmax over the wrong axis", checks["S24"]


def test_a_causal_flag_given_to_an_encoders_fused_attention_is_named_at_its_context(tmp_path):
    code, checks = traced(tmp_path, SEQ_POOL.replace("is_causal=False", "is_causal=True"))
    assert code == 1 and checks[""]["first_failure"].startswith("S14"), checks[""]
    assert checks["S14"]["evidence"]["name"] == "a causal mask where none belongs", checks["S14"]

