"""Forms round twelve's fresh ViTs showed `trace` missing (tests/trace_fresh/ROUND12_VIT.md, "What is left"), each
held by a tiny script of our own (none from the upstream code): correct variants pass, the planted bug is named first
at its own step with its form.

- the pooled row taken inside the head's call with no final sequence captured (`self.head(x[:, -1])`, no final norm
  of the sequence marked): the pooled row's claims are checked on what the head was given against the sequence the
  line itself read (its local `x`), so the wrong token pooled is named at S25;
- the class token appended after the patches (`torch.cat((x, cls), dim=1)`): correct where the last row is pooled,
  named where row 0, a patch, is pooled, the class token read from the step that shows it (S05) or, where none does,
  from the parameter the line read in the `cat`;
- positions added inside a module the embedding line called (`x = self.pos_embed(x)`, no positions step captured):
  the step read as its input plus positions (a sinusoid buffer, or the module's own table), so the positions added
  twice are named at the sum;
- q, k and v each from one Linear (hs → hs) shared by every head, applied to the LayerNorm of the stream split into
  heads (B, N, h, hs): read as one Linear on the merged heads, so S09–S11 are checked against the LayerNorm the line
  was given, and that LayerNorm is the pre-norm evidence that names the MLP given the stream.
"""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

# patches in, class token joined (S06), positions added (S07), one block nobody marked, the head on the pooled row
VIT = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C = 2, 8, 16


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.cls = nn.Parameter(torch.randn(1, 1, C))
        self.pos = nn.Parameter(torch.randn(1, TOKENS, C))
        self.block = nn.Linear(C, C)
        self.norm = nn.LayerNorm(C)
        self.head = HEAD

    def forward(self, x):
        x = x * 1.0  # BREAKPOINT S04
        JOIN
        x = self.pos + x  # BREAKPOINT S07
        FINAL
        logits = self.head(POOLED)  # BREAKPOINT S25
        return logits


with torch.no_grad():
    out = Model().eval()(torch.randn(B, N, C))
'''

NORM_LINEAR = "nn.Sequential(nn.LayerNorm(C), nn.Linear(C, 5))"
PRE_LOGITS = "nn.Sequential(nn.Linear(C, 4 * C), nn.Tanh(), nn.Linear(4 * C, 5))"
# the class token captured as its own step (S05), or read as a parameter in the `cat` with no step showing it
PREPENDED = ("cls = self.cls.expand(x.shape[0], -1, -1)  # BREAKPOINT S05\n        "
             "x = torch.cat((cls, x), dim=1)  # BREAKPOINT S06")
APPENDED = ("cls = self.cls.expand(x.shape[0], -1, -1)  # BREAKPOINT S05\n        "
            "x = torch.cat((x, cls), dim=1)  # BREAKPOINT S06")
APPENDED_READ = "x = torch.cat((x, self.cls.expand(x.shape[0], -1, -1)), dim=1)  # BREAKPOINT S06"
NO_FINAL = "x = x + self.block(x)"  # no final sequence captured: the head's own LayerNorm is the final norm
FINAL_MARKED = "x = self.norm(x + self.block(x))  # BREAKPOINT S23"


def _vit(join: str = PREPENDED, pooled: str = "x[:, 0]", head: str = NORM_LINEAR, final: str = NO_FINAL,
         tokens: str = "N + 1") -> str:
    return (VIT.replace("JOIN", join).replace("POOLED", pooled).replace("HEAD", head).replace("FINAL", final)
            .replace("TOKENS", tokens))


CORRECT = {
    "class token first, row 0 pooled": _vit(),
    "class token appended, the last row pooled": _vit(APPENDED, "x[:, -1]"),
    "class token appended by the parameter read, the last row pooled": _vit(APPENDED_READ, "x[:, -1]", PRE_LOGITS,
                                                                            FINAL_MARKED),
    "mean pooling": _vit(pooled="x.mean(dim=1)"),
    "no class token, mean pooling": _vit("x = x * 1.0  # BREAKPOINT S06", "x.mean(dim=1)", tokens="N"),
}


@pytest.mark.parametrize("source", CORRECT.values(), ids=CORRECT.keys())
def test_correct_pooling_passes(tmp_path, source):
    code, checks = traced(tmp_path, source)
    assert code == 0, checks[""]
    assert checks["S25"]["passed"] is True, checks["S25"]


@pytest.mark.parametrize("pooled, row", [("x[:, -1]", 8), ("x[:, 3]", 3)])
def test_the_wrong_token_pooled_with_no_final_sequence_captured_is_named_from_the_lines_own_sequence(tmp_path, pooled,
                                                                                                    row):
    """CodexEZ/ViT's B3 (round twelve): S23 not captured, the row taken inside the head's call."""
    code, checks = traced(tmp_path, _vit(pooled=pooled))
    assert code == 1 and checks[""]["first_failure"].startswith("S25"), checks[""]
    assert checks["S25"]["evidence"]["name"] == "the wrong token pooled", checks["S25"]
    assert f"it is row {row} of LayerNorm(x), not row 0" in checks["S25"]["detail"]


@pytest.mark.parametrize("join, head, final", [(APPENDED, NORM_LINEAR, NO_FINAL),
                                               (APPENDED_READ, PRE_LOGITS, FINAL_MARKED)],
                         ids=["class token captured, no final sequence", "class token read in the cat, S23 marked"])
def test_a_class_token_appended_then_row_0_pooled_is_named_at_the_head(tmp_path, join, head, final):
    """CodexEZ/ViT's B6 and DogWY/My-ViT's B2 (round twelve): appending alone is a correct form; pooling row 0 after
    it is the bug."""
    code, checks = traced(tmp_path, _vit(join, "x[:, 0]", head, final))
    assert code == 1 and checks[""]["first_failure"].startswith("S25"), checks[""]
    assert checks["S06"]["passed"] is True, checks["S06"]
    assert checks["S25"]["evidence"]["name"] == "the wrong token pooled", checks["S25"]
    assert "the class token is the last row (S06's last row is" in checks["S25"]["detail"]
    assert "but row 0 was pooled" in checks["S25"]["detail"]


# the token embeddings (G02), then a module that adds the positions in its own forward (G04), no G03 marked
POSITIONS_INSIDE = '''\
import math
import torch
import torch.nn as nn

torch.manual_seed(0)
T, C = 6, 16


class Positions(nn.Module):
    def __init__(self):
        super().__init__()
        pe = torch.zeros(32, C)
        position = torch.arange(32).unsqueeze(1).float()
        div = torch.exp(torch.arange(0, C, 2).float() * (-math.log(10000.0) / C))
        pe[:, 0::2], pe[:, 1::2] = torch.sin(position * div), torch.cos(position * div)
        TABLE

    def forward(self, x):
        return ADDED


token_table, positions = nn.Embedding(20, C), Positions()
ids = torch.tensor([[1, 5, 7, 2, 9, 3], [4, 4, 8, 0, 6, 1]])
with torch.no_grad():
    x = token_table(ids)  # BREAKPOINT G02
    x = positions(x)  # BREAKPOINT G04
'''

SINUSOID = 'self.register_buffer("pe", pe.unsqueeze(0))'
LEARNED = "self.pe = nn.Parameter(torch.randn(1, 32, C))"
ONCE, TWICE = "x + self.pe[:, :x.size(1)]", "x + self.pe[:, :x.size(1)] + self.pe[:, :x.size(1)]"


@pytest.mark.parametrize("table", [SINUSOID, LEARNED], ids=["sinusoid buffer", "learned table"])
def test_positions_added_once_inside_a_module_pass(tmp_path, table):
    code, checks = traced(tmp_path, POSITIONS_INSIDE.replace("TABLE", table).replace("ADDED", ONCE))
    assert code == 0, checks[""]
    assert checks["G04"]["passed"] is True, checks["G04"]


@pytest.mark.parametrize("table, said", [(SINUSOID, "a sinusoid table of amplitude 2"), (LEARNED, "twice pos_emb")],
                         ids=["sinusoid buffer", "learned table"])
def test_positions_added_twice_inside_a_module_are_named_at_the_sum(tmp_path, table, said):
    """Yeabebe/Simple-Transformer's B6 (round twelve): `x + 2 * self.pe[:, :x.size(1)]` in the module's forward."""
    code, checks = traced(tmp_path, POSITIONS_INSIDE.replace("TABLE", table).replace("ADDED", TWICE))
    assert code == 1 and checks[""]["first_failure"].startswith("G04"), checks[""]
    assert checks["G04"]["evidence"]["name"] == "positions added twice", checks["G04"]
    assert said in checks["G04"]["detail"]


def test_a_residual_added_inside_a_wrapper_is_not_read_as_positions(tmp_path):
    """A term that differs between the items is no position table: the step stays as it was (not checkable)."""
    source = POSITIONS_INSIDE.replace("TABLE", SINUSOID).replace("ADDED", "x + torch.tanh(x)")
    code, checks = traced(tmp_path, source)
    assert code == 0, checks[""]
    assert checks["G04"]["passed"] is None and "needs snapshot G03" in checks["G04"]["detail"], checks["G04"]


# a pre-norm block whose q, k, v Linears are shared by the heads, applied after the split; its MLP's LayerNorm: MLP_IN
SHARED_HEADS = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, H = 2, 9, 32, 4
hs = C // H


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm_1, self.norm_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.q, self.k, self.v = (nn.Linear(hs, hs, bias=False) for _ in range(3))
        self.out = nn.Linear(C, C)
        self.fc1, self.fc2 = nn.Linear(C, 2 * C), nn.Linear(2 * C, C)

    def forward(self, x):  # BREAKPOINT S08
        heads = self.norm_1(x).reshape(B, N, H, hs)
        q = self.q(heads)  # BREAKPOINT S09
        k = self.k(heads)  # BREAKPOINT S10
        v = self.v(heads)  # BREAKPOINT S11
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / hs ** 0.5  # BREAKPOINT S12
        probs = scores.softmax(dim=-1)  # BREAKPOINT S13
        context = torch.einsum("bhqk,bkhd->bqhd", probs, v)  # BREAKPOINT S14
        attended = self.out(context.reshape(B, N, C))  # BREAKPOINT S15
        x = attended + x  # BREAKPOINT S16
        mlp = self.fc2(torch.relu(self.fc1(MLP_IN)))  # BREAKPOINT S18
        return mlp + x  # BREAKPOINT S19


with torch.no_grad():
    out = Block().eval()(torch.randn(B, N, C))
'''


def test_q_k_v_from_a_linear_shared_by_the_heads_are_checked_against_the_layernorm_it_was_given(tmp_path):
    code, checks = traced(tmp_path, SHARED_HEADS.replace("MLP_IN", "self.norm_2(x)"))
    assert code == 0, checks[""]
    for label in ("S09", "S10", "S11", "S18", "S19"):
        assert checks[label]["passed"] is True, (label, checks[label])
    assert "split into 4 heads" in checks["S09"]["detail"]


def test_the_mlp_given_the_stream_is_named_where_only_shared_head_linears_show_the_layernorm(tmp_path):
    """ADulian/Vision_Transformer's B5 (round twelve): `norm_2` left out."""
    code, checks = traced(tmp_path, SHARED_HEADS.replace("MLP_IN", "x"))
    assert code == 1 and checks[""]["first_failure"].startswith("S18"), checks[""]
    assert checks["S18"]["evidence"]["name"] == "sublayer given the stream, not its LayerNorm", checks["S18"]
