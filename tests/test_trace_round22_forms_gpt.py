"""Round twenty-two's GPT-side form (tests/trace_fresh/ROUND22_GPT.md, "What the checks missed", first row), built in
a script of our own: **attention sinks**, n learned key and value rows in front of the T positions (modern_llm's,
StreamingLLM's), so the scores, masked scores and probabilities are (B, h, T, n + T) while q, k, v and the mask the
script builds cover the T positions. Read as a correct form with n fitted from the widths (checks/sinks.py): the mask
with n always-allowed columns in front, the scores checked on their T token columns (the sinks' columns said, not
judged: no snapshot shows their keys), the causal rule on the token columns only, the softmax over all n + T, the
context with the sinks' value rows fitted. A scale bug behind them is then named at the scores; the sinks' mask columns
put at the wrong end at the masked scores. A step whose shapes fit no known form says so, not PyTorch's shape error."""

from __future__ import annotations

from tests.conftest import trace_source as traced

SINKS = '''\
import math
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C, H, N = 2, 8, 32, 4, SINK_COUNT
HS = C // H


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(C, C) for _ in range(4))
        self.sink_k = nn.Parameter(torch.randn(1, H, N, HS))
        self.sink_v = nn.Parameter(torch.randn(1, H, N, HS))
        self.scale = 1.0 / math.sqrt(SCALED_BY)

    def forward(self, x, mask):
        q = self.q_proj(x).view(B, T, H, HS).transpose(1, 2)  # BREAKPOINT G08
        k = self.k_proj(x).view(B, T, H, HS).transpose(1, 2)  # BREAKPOINT G09
        v = self.v_proj(x).view(B, T, H, HS).transpose(1, 2)  # BREAKPOINT G10
        k = torch.cat([self.sink_k.expand(B, -1, -1, -1), k], dim=2)
        v = torch.cat([self.sink_v.expand(B, -1, -1, -1), v], dim=2)
        mask = torch.cat(SINK_COLUMNS_FIRST, dim=-1)
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale  # BREAKPOINT G11
        scores = scores + mask  # BREAKPOINT G13
        probs = torch.softmax(scores, dim=-1)  # BREAKPOINT G14
        context = torch.matmul(probs, v)  # BREAKPOINT G15
        context = context.transpose(1, 2).reshape(B, T, C)  # BREAKPOINT G16
        return self.out_proj(context)  # BREAKPOINT G17


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(C), Attention()

    def forward(self, x, mask):
        h = self.ln_1(x)  # BREAKPOINT G06
        x = x + self.attn(h, mask)  # BREAKPOINT G18
        return x


blocks = nn.ModuleList([Block(), Block()]).eval()
x = torch.randn(B, T, C)
causal = torch.ones(T, T).tril().bool()
mask = torch.zeros(B, 1, T, T).masked_fill(~causal, torch.finfo(torch.float32).min)  # BREAKPOINT G12
with torch.no_grad():
    for block in blocks:
        x = block(x, mask)
'''
SINK_COLUMNS_FIRST = "[torch.zeros(B, 1, T, N), mask]"


def sinks(count: int = 2, scaled_by: str = "HS", columns: str = SINK_COLUMNS_FIRST) -> str:
    return (SINKS.replace("SINK_COUNT", str(count)).replace("SCALED_BY", scaled_by)
            .replace("SINK_COLUMNS_FIRST", columns))


def test_an_attention_with_two_sinks_in_front_of_its_keys_and_values_passes_with_the_sinks_said(tmp_path):
    code, checks = traced(tmp_path, sinks())
    assert code == 0, {label: check["detail"] for label, check in checks.items() if label}
    for label in ("G11", "G12", "G13", "G14", "G15", "G16"):
        assert checks[label]["passed"] is True, (label, checks[label]["detail"])
        assert "2 attention sinks" in checks[label]["detail"] or "2 sinks' value rows" in checks[label]["detail"], \
            (label, checks[label]["detail"])
    assert "on the 8 token columns" in checks["G11"]["detail"]
    assert "their columns reported, not judged" in checks["G11"]["detail"]
    assert "the causal rule judged on the 8 token columns alone" in checks["G12"]["detail"]
    assert "on the 8 token columns: the sinks' columns are always allowed" in checks["G14"]["detail"]
    assert "the 2 sinks' value rows fitted per head" in checks["G15"]["detail"]


def test_scores_of_an_attention_with_sinks_scaled_by_one_over_root_c_are_named_at_the_scores(tmp_path):
    code, checks = traced(tmp_path, sinks(scaled_by="C"))
    assert code == 1 and checks[""]["first_failure"].startswith("G11"), checks[""]
    assert checks["G11"]["evidence"]["name"] == "another scaling than 1/√hs", checks["G11"]["detail"]
    assert "1/√32 where the scaling is 1/√8" in checks["G11"]["detail"]


def test_the_sinks_mask_columns_put_after_the_positions_are_named_at_the_masked_scores(tmp_path):
    code, checks = traced(tmp_path, sinks(columns="[mask, torch.zeros(B, 1, T, N)]"))
    assert code == 1 and checks[""]["first_failure"].startswith("G13"), checks[""]
    assert checks["G13"]["evidence"]["name"] == "attention sinks' mask columns at the wrong end", \
        checks["G13"]["detail"]
    assert checks["G14"]["evidence"]["name"] == "no query attends to a later key", checks["G14"]["detail"]


def test_as_many_extra_keys_as_positions_are_no_sinks_and_say_the_form_is_unknown_not_a_shape_error(tmp_path):
    code, checks = traced(tmp_path, sinks(count=8))
    assert code == 0, checks[""]
    assert checks["G15"]["status"] == "unrecognised", checks["G15"]
    assert "a form the checks do not know: the shapes read (" in checks["G15"]["detail"], checks["G15"]["detail"]
    assert "(2, 4, 8, 16)" in checks["G15"]["detail"] and "Expected size" not in checks["G15"]["detail"]
