"""What round eighteen's first result on fresh GPT code found wrong in a verdict (tests/trace_fresh/ROUND18_GPT.md),
built here in a script of our own, none from the upstream code (robflynnyh/causal-transformer): the scores are marked
(G11) before a position bias is added to them in place, and the mask is then filled in place with −finfo.max (G13).

- G13 had passed with a tolerance of 3e+34: the comparison's scale came from the masking value, so the scores' 44 apart
  where the mask allows passed. A masking value matched exactly now sets no scale (checks/base.py ``close``).
- The evidence rule must not then call the mask (G12) "computed from the masked scores (G13) where the scores belong":
  masking the masked scores again gives them back whatever the code, and the masked scores are what G12's claim
  derives, never an input it could have been computed from (checks/evidence.py ``_candidates``)."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

BIASED_IN_PLACE = '''\
import torch

torch.manual_seed(0)
B, h, T, hs = 2, 2, 6, 8
with torch.no_grad():
    q = torch.randn(B, h, T, hs)  # BREAKPOINT G08
    k = torch.randn(B, h, T, hs)  # BREAKPOINT G09
    v = torch.randn(B, h, T, hs)  # BREAKPOINT G10
    blocked = torch.ones(T, T, dtype=torch.bool).triu(1)
    mask = ~blocked  # BREAKPOINT G12
    dots = q @ k.transpose(-2, -1) / hs ** 0.5  # BREAKPOINT G11
    dots += BIAS
    dots.masked_fill_(blocked, -torch.finfo(dots.dtype).max)  # BREAKPOINT G13 dots
    probs = dots.softmax(dim=-1)  # BREAKPOINT G14
    context = probs @ v  # BREAKPOINT G15
'''


def test_masked_scores_off_from_the_scores_where_the_mask_allows_do_not_pass_by_the_masking_value(tmp_path):
    code, checks = traced(tmp_path, BIASED_IN_PLACE.replace("BIAS", "torch.randn(h, T, T) * 3"))
    assert code == 0, checks[""]
    assert checks["G13"]["passed"] is not True, checks["G13"]["detail"]
    assert "tolerance 3e+34" not in checks["G13"]["detail"] + checks["G12"]["detail"]
    assert checks["G12"]["passed"] is not False, checks["G12"]["detail"]  # not "computed from the masked scores"
    assert checks["G14"]["passed"] is True


@pytest.mark.parametrize("fill", ["-torch.finfo(dots.dtype).max", "-1e9", "float('-inf')"])
def test_masked_scores_equal_to_the_scores_where_the_mask_allows_pass_whatever_the_masking_value(tmp_path, fill):
    script = BIASED_IN_PLACE.replace("BIAS", "0.0").replace("-torch.finfo(dots.dtype).max", fill)
    code, checks = traced(tmp_path, script)
    assert code == 0, checks[""]
    for label in ("G11", "G12", "G13", "G14", "G15"):
        assert checks[label]["passed"] is True, (label, checks[label]["detail"])


REZERO = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, S, C = 2, 6, 16
linear1, linear2 = nn.Linear(C, 32), nn.Linear(32, C)
alpha = nn.Parameter(torch.tensor(0.37))  # ReZero: the sublayer's output times a learned scalar, no norm anywhere
with torch.no_grad():
    x, attended = torch.randn(B, S, C), torch.randn(B, S, C)  # the layer's input, its attention's output
    src = x + attended * alpha  # Snapshot #15
    ff_in = src  # Snapshot #16
    src2 = linear2(torch.relu(linear1(ff_in)))  # Snapshot #18
    src = src + src2 * alpha
    enc_out = src  # Snapshot #19
'''


def test_a_layer_ending_with_a_scaled_residual_sum_and_no_norm_is_not_called_post_norm(tmp_path):
    """majumderb/rezero's overview had said "post-norm" for a model without a norm: its #19 held as a sum with a
    scaled sublayer output (LayerScale's form), and every held claim but the plain sum's was read as post-norm."""
    code, checks = traced(tmp_path, REZERO)
    assert code == 0 and checks["#19"]["passed"] is True, checks["#19"]["detail"]
    normalisation = [v for v in checks[""]["recognised"]["variants"] if v["what"] == "Normalisation"]
    assert [v["variant"].split(" (")[0] for v in normalisation] == ["pre-norm, or no norm at all"], normalisation
