"""Round sixteen's leftovers (tests/trace_fresh/ROUND16_GPT.md, "What is left"; helper leftovers17): correct code in
the forms that kept most of round sixteen's steps unread, built here in scripts of our own, none from the upstream
code:

- keys and values over a memory of earlier positions before the queries' own (augustwester/transformer-xl's segment
  memory, ``h = cat(mem, x)``): K and V (B, h, S, hs) and the scores (B, h, T, S) with S = M + T > T are read as they
  are, and the causal rule lets query i see keys up to M + i (G09–G16 were unrecognised: "axis 2 is 12, T = 8");
  the mask aligned to the keys' start instead (``tril(0)``: each query blind to its own key and the latest memory) is
  named; the 1/√hs applied on the masking line (``att_score.tril(mem_len) / √hs``) is a correct form where the scores
  step is not already scaled;
- a post-norm block's end on one line that calls its MLP (an ``nn.Sequential``) and its LayerNorm,
  ``return self.layer_norm(self.net(x) + x)``, neither the sum nor the MLP output marked (augustwester's G24: not
  checkable): read as the LayerNorm of the normalised stream plus the MLP's last Linear output; the residual dropped is
  named;
- a conditional position encoding (Twins-SVT's PEG, rosinality/vision-transformers-pytorch: S07 unrecognised, "the
  added term is not the same for every item"): the tokens kept as a grid plus a depthwise convolution of themselves,
  fitted from the tensors; the convolution given the grid transposed is named."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

MEMORY = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, M, h, hs = 2, 6, 3, 2, 4
C = h * hs

q_proj, k_proj, v_proj = nn.Linear(C, C), nn.Linear(C, C), nn.Linear(C, C)
x = torch.randn(B, T, C)
mem = torch.randn(B, M, C)  # the previous segment's layer inputs
with torch.no_grad():
    hx = torch.cat((mem, x), dim=1)
    S = hx.shape[1]
    q = q_proj(x).view(B, T, h, hs).transpose(1, 2)  # BREAKPOINT G08
    k = k_proj(hx).view(B, S, h, hs).transpose(1, 2)  # BREAKPOINT G09
    v = v_proj(hx).view(B, S, h, hs).transpose(1, 2)  # BREAKPOINT G10
    scores = q @ k.transpose(-2, -1) / hs ** 0.5  # BREAKPOINT G11
    mask = torch.ones(T, S, dtype=torch.bool).tril(DIAGONAL)  # MASK_MARKER
    masked = scores.masked_fill(~mask, float("-inf"))  # BREAKPOINT G13
    probs = masked.softmax(dim=-1)  # BREAKPOINT G14
    concat = (probs @ v).transpose(1, 2).reshape(B, T, C)  # BREAKPOINT G16
'''


SCALED_ON_THE_MASKING_LINE = (("scores = q @ k.transpose(-2, -1) / hs ** 0.5", "scores = q @ k.transpose(-2, -1)"),
                              ('scores.masked_fill(~mask, float("-inf"))',
                               'scores.masked_fill(~mask, float("-inf")) / hs ** 0.5'))


def scaled_on_the_masking_line(source: str) -> str:
    """Transformer-XL's ``att_score.tril(mem_len) / √hs``: the scores step unscaled, the scale on the masking line."""
    for old, new in SCALED_ON_THE_MASKING_LINE:
        assert old in source
        source = source.replace(old, new)
    return source


@pytest.mark.parametrize("marker", ["", "BREAKPOINT G12"])
def test_keys_over_a_memory_before_the_queries_are_read(tmp_path, marker):
    """Transformer-XL (round sixteen's augustwester): 3 memory positions before 6 queries, each query seeing the
    memory, the earlier queries' keys and its own; the mask marked or not."""
    code, checks = traced(tmp_path, MEMORY.replace("DIAGONAL", "S - T").replace("MASK_MARKER", marker))
    assert code == 0, checks[""]
    for label in ("G09", "G10", "G11", "G13", "G14", "G16") + (("G12",) if marker else ()):
        assert checks[label]["passed"] is True, (label, checks[label]["detail"])


@pytest.mark.parametrize("marker", ["", "BREAKPOINT G12"])
def test_a_memory_mask_aligned_to_the_keys_start_is_named(tmp_path, marker):
    """``tril(0)`` over (T, S): query i sees keys 0 … i, the memory's first, never its own key (round sixteen's
    Transformer-XL B3), named at the mask where it is marked, else at the masked scores."""
    code, checks = traced(tmp_path, MEMORY.replace("DIAGONAL", "0").replace("MASK_MARKER", marker))
    label = "G12" if marker else "G13"
    assert code == 1
    assert checks[label]["passed"] is False, checks[label]["detail"]
    assert checks[label]["evidence"]["name"] == "causal mask aligned to the keys' start", checks[label]


def test_the_scale_on_the_masking_line_is_a_correct_form(tmp_path):
    """The scores unscaled (G11 "1/√d missing", the catalogue's Q·Kᵀ/√hs), the 1/√hs applied where they are
    masked: the masked scores pass, the scores step stays the one that says where the scale is missing."""
    code, checks = traced(tmp_path, scaled_on_the_masking_line(MEMORY.replace("DIAGONAL", "S - T")
                                                                .replace("MASK_MARKER", "")))
    assert checks["G13"]["passed"] is True, checks["G13"]["detail"]
    assert "applied on the masking line" in checks["G13"]["name"]
    assert checks["G14"]["passed"] is True, checks["G14"]["detail"]


def test_a_second_scale_on_the_masking_line_is_not_passed(tmp_path):
    """Q·Kᵀ/√hs scaled again where it is masked: the masked scores are not the scores' own."""
    source = MEMORY.replace("DIAGONAL", "S - T").replace("MASK_MARKER", "")
    code, checks = traced(tmp_path, source.replace(*SCALED_ON_THE_MASKING_LINE[1]))
    assert checks["G11"]["passed"] is True, checks["G11"]["detail"]
    assert checks["G13"]["passed"] is not True, checks["G13"]["detail"]


def test_a_memory_mask_at_the_keys_start_is_named_with_the_scale_on_its_line(tmp_path):
    """Round sixteen's Transformer-XL B3 as upstream writes it: ``tril(0) / √hs`` on one line."""
    code, checks = traced(tmp_path, scaled_on_the_masking_line(MEMORY.replace("DIAGONAL", "0")
                                                                .replace("MASK_MARKER", "")))
    assert code == 1
    assert checks["G13"]["evidence"]["name"] == "causal mask aligned to the keys' start", checks["G13"]


PEG = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, H, W, C = 2, 6, 6, 8


class PEG(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Conv2d(C, C, 3, padding=1, groups=C)

    def forward(self, x):
        out = x.permute(0, 3, 1, 2)
        out = self.proj(out) + out
        out = out.permute(0, 2, 3, 1)  # BREAKPOINT S07
        return out


embed, peg = nn.Linear(12, C), PEG()
patches = torch.randn(B, H, W, 12)
with torch.no_grad():
    tokens = embed(patches)  # BREAKPOINT S04
    x = peg(tokens)
'''


def test_a_conditional_position_encoding_is_a_correct_form(tmp_path):
    """Twins' PEG: the grid plus a depthwise 3×3 convolution of it, the term added different for every item."""
    code, checks = traced(tmp_path, PEG)
    assert code == 0, checks[""]
    assert checks["S07"]["passed"] is True, checks["S07"]["detail"]
    assert "conditional position encoding" in checks["S07"]["name"]


def test_a_conditional_position_encoding_on_the_transposed_grid_is_named(tmp_path):
    """Round sixteen's Twins B3: the convolution given the grid with its height and width swapped, the stage going on
    with the transposed grid."""
    code, checks = traced(tmp_path, PEG.replace("x.permute(0, 3, 1, 2)", "x.permute(0, 3, 2, 1)"))
    assert code == 1
    assert checks["S07"]["evidence"]["name"] == "position encoding on the transposed grid", checks["S07"]


def test_a_conditional_position_encoding_after_the_first_block_is_a_correct_form(tmp_path):
    """Twins (and CPVT) place the encoding after each stage's first block, on that block's output: the step reads a
    tensor that ran before it, not the patch embeddings, and is no "computed from another tensor"."""
    source = PEG.replace("embed, peg = nn.Linear(12, C), PEG()",
                         "embed, peg, mlp = nn.Linear(12, C), PEG(), nn.Linear(C, C)")
    source = source.replace("    x = peg(tokens)\n",
                            "    first = tokens + mlp(tokens)  # BREAKPOINT S20\n    x = peg(first)\n")
    code, checks = traced(tmp_path, source)
    assert code == 0, checks[""]
    assert checks["S07"]["passed"] is True, checks["S07"]["detail"]
    assert "placed after a block" in checks["S07"]["name"]


POST_NORM_END = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C = 2, 6, 16


class FeedForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(C, 32), nn.Dropout(0.0), nn.ReLU(), nn.Linear(32, C), nn.Dropout(0.0))
        self.layer_norm = nn.LayerNorm(C)

    def forward(self, x):
        return self.layer_norm(SUM)  # BREAKPOINT G24


attn_norm, proj, ff = nn.LayerNorm(C), nn.Linear(C, C), FeedForward()
ff.eval()
x = torch.randn(B, T, C)
with torch.no_grad():
    h = x  # BREAKPOINT G05
    att_out = attn_norm(proj(h) + h)  # BREAKPOINT G19
    out = ff(att_out)
'''


def test_a_post_norm_block_end_made_on_one_line_is_read(tmp_path):
    """Transformer-XL's ``LayerNorm(net(x) + x)``: the MLP's output from its last Linear, the stream G19."""
    code, checks = traced(tmp_path, POST_NORM_END.replace("SUM", "self.net(x) + x"))
    assert code == 0, checks[""]
    assert checks["G24"]["passed"] is True, checks["G24"]["detail"]


def test_a_post_norm_block_end_without_its_residual_is_named(tmp_path):
    """Round sixteen's Transformer-XL B6: ``LayerNorm(net(x))``."""
    code, checks = traced(tmp_path, POST_NORM_END.replace("SUM", "self.net(x)"))
    assert code == 1
    assert checks["G24"]["evidence"]["name"] == "residual dropped", checks["G24"]
