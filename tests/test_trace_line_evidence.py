"""What a marked line itself gave is used before a step is called not checkable (issue 40, point 4), so the bug it
hides is named first with its bug form: the stream a pre-norm residual line normalised (``x + self.attn(self.ln(x))``,
the block input unmarked) read as the norm's input; the position table a line added from a buffer it read by attribute
(``x + self.pe[:T]``); the one parameter of a module of the user's the line called (``self.pos_embedding(x)``). On
correct code each of them passes; with the bug planted, the step is red with the bug form. A step captured one part
per hit (attention written as loops over the items and heads) is red where a bug form fits every part."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from transformer_trace.checks import SoftmaxRows
from tests.conftest import trace_source as traced
from transformer_trace.sources import Ref
from transformer_trace.trace.reading.parts import evidence_in_parts

# a pre-norm GPT block of the user's own classes, its first residual sum marked and nothing it reads
PRE_NORM = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C = 2, 5, 16


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(C, C)

    def forward(self, x):
        return self.proj(torch.tanh(x))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(C), Attention()

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))  # BREAKPOINT G18
        return x


with torch.no_grad():
    Block()(torch.randn(B, T, C))
'''

# the token embeddings marked, the positions a sinusoid buffer the embedding line adds (as PyTorch's
# word_language_model writes it, batch-first here)
BUFFER_POSITIONS = '''\
import math

import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C, V = 2, 6, 16, 50


class Positions(nn.Module):
    def __init__(self):
        super().__init__()
        pe = torch.zeros(100, C)
        position = torch.arange(0, 100, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, C, 2).float() * (-math.log(10000.0) / C))
        pe[:, 0::2], pe[:, 1::2] = torch.sin(position * div_term), torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        x = x + self.pe[:, :x.size(1)]  # BREAKPOINT G04
        return x


embedding = nn.Embedding(V, C)
with torch.no_grad():
    tok = embedding(torch.randint(0, V, (B, T)))  # BREAKPOINT G02
    Positions()(tok)
'''

# a ViT's positions added by a module of the user's holding the table (lukemelas' PositionalEmbedding1D)
MODULE_POSITIONS = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)


class PositionalEmbedding1D(nn.Module):
    def __init__(self, seq_len, dim):
        super().__init__()
        self.pos_embedding = nn.Parameter(torch.randn(1, seq_len, dim))

    def forward(self, x):
        return x + self.pos_embedding


positional_embedding = PositionalEmbedding1D(5, 16)
with torch.no_grad():
    x = torch.randn(2, 5, 16)  # BREAKPOINT S06
    x = positional_embedding(x)  # BREAKPOINT S07
'''

CASES = {
    "pre-norm stream": (PRE_NORM, "x = x + self.attn(self.ln_1(x))", "x = self.attn(self.ln_1(x))", "G18",
                        "residual dropped", "the input of the LayerNorm the line applied"),
    "buffer positions": (BUFFER_POSITIONS, "x = x + self.pe[:, :x.size(1)]",
                         "x = x + self.pe[:, :x.size(1)] + self.pe[:, :x.size(1)]", "G04", "added twice",
                         "the table the line read"),
    "module positions": (MODULE_POSITIONS, "return x + self.pos_embedding",
                         "return x + self.pos_embedding + self.pos_embedding", "S07", "positions added twice",
                         "the weight of the PositionalEmbedding1D it called"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_step_is_checked_with_what_its_own_line_gave_where_no_snapshot_shows_it(tmp_path, case):
    source, _, _, label, _, read = CASES[case]
    code, checks = traced(tmp_path, source)
    assert code == 0
    assert checks[label]["passed"] is True, checks[label]["detail"]
    assert read in checks[label]["detail"]


@pytest.mark.parametrize("case", CASES)
def test_the_bug_that_line_hides_is_named_first_with_its_form(tmp_path, case):
    source, old, new, label, form, _ = CASES[case]
    assert source.count(old) == 1
    code, checks = traced(tmp_path, source.replace(old, new))
    assert code == 1 and checks[""]["first_failure"].startswith(f"{label} ")
    assert checks[label]["passed"] is False and checks[label]["evidence"]["name"] == form, checks[label]["detail"]


# ----------------------------------------------------------------------------- a step captured one part per hit


def _parts(dim: int, dropout: float = 0.0) -> tuple[torch.Tensor, ...]:
    torch.manual_seed(0)
    return tuple(F.dropout(torch.softmax(torch.randn(6, 6), dim=dim), dropout) for _ in range(4))


def test_a_bug_form_that_fits_every_part_of_a_step_written_as_loops_is_evidence_for_a_red_verdict():
    result = evidence_in_parts(SoftmaxRows(out=Ref("probs"), scores=Ref("scores")), _parts(dim=0), {})
    assert result is not None and result.status == "failed"
    assert result.evidence is not None and result.evidence.name == "softmax over the wrong axis"
    assert "on each of the 4 hits" in result.detail


@pytest.mark.parametrize("parts", [_parts(dim=-1), _parts(dim=-1, dropout=0.5)], ids=["softmax", "through a dropout"])
def test_parts_of_a_correct_step_even_through_a_dropout_are_no_evidence(parts):
    assert evidence_in_parts(SoftmaxRows(out=Ref("probs"), scores=Ref("scores")), parts, {}) is None
