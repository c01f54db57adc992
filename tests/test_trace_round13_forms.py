"""Correct code in the forms round thirteen's fresh GPT-style implementations brought
(tests/trace_fresh/ROUND13_GPT.md), built here in scripts of our own, none from the upstream code:

- masked scores whose mask no line shows (the causal buffer sliced inside the ``masked_fill`` line, the GPT's G13 with
  no G12): read from the step's own masked entries, which a causal model's must put exactly above the diagonal; a mask
  left off or shifted is named there ("no query attends to a later key") instead of one step later at G14;
- a head tied to the token embeddings that keeps a bias of its own (``nn.Linear(C, V)`` whose weight is replaced by
  the embedding's, its default bias kept): G26 passes as the tied head plus that bias."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

CAUSAL_BUFFER = '''\
import torch
import torch.nn.functional as F

torch.manual_seed(0)
B, H, T, hs = 2, 4, 8, 8
tril = torch.tril(torch.ones(16, 16))
q, k = torch.randn(B, H, T, hs), torch.randn(B, H, T, hs)
att = (q @ k.transpose(-2, -1)) * hs ** -0.5  # BREAKPOINT G11
att = att.masked_fill(
    CONDITION,
    float("-inf")
)  # BREAKPOINT G13
probs = F.softmax(att, dim=-1)  # BREAKPOINT G14
'''


def test_masked_scores_with_no_mask_marked_pass_when_their_own_masked_entries_are_the_causal_rule(tmp_path):
    code, checks = traced(tmp_path, CAUSAL_BUFFER.replace("CONDITION", "tril[:T, :T] == 0"))
    assert code == 0, checks[""]
    assert checks["G13"]["passed"] is True, checks["G13"]["detail"]
    assert "every score above the diagonal masked: True" in checks["G13"]["detail"]


@pytest.mark.parametrize("condition, visible", [("tril[:T, :T] == 2", 28 * 8), ("tril[1:T + 1, :T] == 0", 7 * 8)])
def test_a_causal_mask_left_off_or_shifted_with_no_mask_marked_is_named_at_the_masked_scores(tmp_path, condition,
                                                                                             visible):
    """Prasannajaga/transformers-playground's B2 (round thirteen, the fill condition never true) and
    zhangir-azerbayev/ml-monorepo's B3 (the buffer's rows 1…T)."""
    code, checks = traced(tmp_path, CAUSAL_BUFFER.replace("CONDITION", condition))
    assert code == 1
    assert checks[""]["first_failure"].startswith("G13"), checks[""]["first_failure"]
    assert checks["G13"]["evidence"]["name"] == "no query attends to a later key"
    assert f"leaves {visible} scores above the diagonal unmasked" in checks["G13"]["detail"]


TIED_HEAD = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
V, C = 40, 16
tok_emb = nn.Embedding(V, C)
final_norm = nn.LayerNorm(C)
lm_head = nn.Linear(C, V, bias=HEAD_BIAS)
lm_head.weight = tok_emb.weight
ids = torch.tensor([[1, 5, 7, 2, 9, 3], [4, 4, 8, 0, 6, 1]])
with torch.no_grad():
    tok = tok_emb(ids)  # BREAKPOINT G02
    x = final_norm(tok)  # BREAKPOINT G25
    logits = lm_head(x)  # BREAKPOINT G26
'''


@pytest.mark.parametrize("bias", [True, False])
def test_a_tied_head_passes_with_or_without_a_bias_of_its_own(tmp_path, bias):
    """Prasannajaga/transformers-playground's head (round thirteen): tied to the token embeddings, nn.Linear's default
    bias kept."""
    code, checks = traced(tmp_path, TIED_HEAD.replace("HEAD_BIAS", str(bias)))
    assert code == 0, checks[""]
    assert checks["G26"]["passed"] is True, checks["G26"]["detail"]
    assert ("the head's own bias" in checks["G26"]["detail"]) is bias


def test_a_tied_head_whose_logits_leave_out_its_bias_is_not_passed(tmp_path):
    source = TIED_HEAD.replace("HEAD_BIAS", "True").replace("logits = lm_head(x)",
                                                             "logits = x @ lm_head.weight.T + 2 * lm_head.bias")
    code, checks = traced(tmp_path, source)
    assert checks["G26"]["passed"] is not True, checks["G26"]["detail"]


PARALLEL_BLOCK = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C, H = 2, 8, 32, 4


class ParallelBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(C)
        self.qkv = nn.Linear(C, 3 * C)
        self.fc, self.proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):  # BREAKPOINT G05 x
        h = self.ln(x)
        q, k, v = [t.view(B, T, H, C // H).transpose(1, 2) for t in self.qkv(h).chunk(3, dim=-1)]
        att = (q @ k.transpose(-2, -1) / (C // H) ** 0.5).masked_fill(torch.tril(torch.ones(T, T)) == 0, float("-inf"))
        outs = (att.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, C)  # BREAKPOINT G16
        mlp_out = self.proj(torch.relu(self.fc(h)))  # BREAKPOINT G22
        return SUM  # BREAKPOINT G23


with torch.no_grad():
    y = ParallelBlock().eval()(torch.randn(B, T, C))
'''


def test_a_parallel_blocks_one_sum_with_no_first_residual_sum_passes_as_input_plus_both_sublayers(tmp_path):
    """zhangir-azerbayev/ml-monorepo's ParallelTransformerBlock (round thirteen): `outs + mlp_out + inputs`, no
    attention output projection, no first residual sum to mark."""
    code, checks = traced(tmp_path, PARALLEL_BLOCK.replace("SUM", "outs + mlp_out + x"))
    assert code == 0, checks[""]
    assert checks["G23"]["passed"] is True, checks["G23"]["detail"]
    assert "parallel block" in checks["G23"]["name"]


def test_the_block_input_left_out_of_that_sum_is_named_residual_dropped(tmp_path):
    code, checks = traced(tmp_path, PARALLEL_BLOCK.replace("SUM", "outs + mlp_out"))
    assert code == 1
    assert checks["G23"]["evidence"]["name"] == "residual dropped", checks["G23"]["detail"]


def test_another_sum_with_no_first_residual_sum_is_still_not_judged(tmp_path):
    """A value the three-operand sum does not explain (here the MLP output counted twice) is no evidence without the
    first residual sum: the step stays not checkable, as before."""
    code, checks = traced(tmp_path, PARALLEL_BLOCK.replace("SUM", "outs + 2 * mlp_out + x"))
    assert checks["G23"]["passed"] is not True
    assert checks["G23"].get("evidence") is None, checks["G23"]["detail"]
