"""What round nineteen's first result on fresh ViTs found wrong (tests/trace_fresh/ROUND19_VIT.md), built here in
scripts of our own, none from the upstream code (aanna0701/SPT_LSA_ViT's Locality Self-Attention):

- a marker at the end of an in-place item assignment (`dots[:, :, i, i] = -987654321  # BREAKPOINT S12`) was refused
  ("assigns no variable"): it now captures the subscripted variable once the line has changed it, as "captures what
  that statement assigns" reads; a line that assigns nothing is still refused.
"""

from __future__ import annotations

import pytest

from transformer_trace.cli import main
from tests.conftest import trace_source as traced

# LSA's attention: a learned temperature per head (1/√hs at initialisation) applied with torch.mul, then the diagonal
# of the scores set in place to a large finite value (each token masked from itself)
LSA = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, h, N, hs = 2, 4, 9, 8
temperature = nn.Parameter(hs ** -0.5 * torch.ones(h))
diagonal = torch.nonzero(torch.eye(N) == 1, as_tuple=False)
with torch.no_grad():
    q = torch.randn(B, h, N, hs)  # BREAKPOINT S09
    k = torch.randn(B, h, N, hs)  # BREAKPOINT S10
    v = torch.randn(B, h, N, hs)  # BREAKPOINT S11
    dots = torch.mul(q @ k.transpose(-2, -1), temperature.unsqueeze(0).unsqueeze(-1).unsqueeze(-1).expand((B, h, 1, 1)))
    dots[:, :, diagonal[:, 0], diagonal[:, 1]] = -987654321  # BREAKPOINT S12
    attn = dots.softmax(dim=-1)  # BREAKPOINT S13
    out = attn @ v  # BREAKPOINT S14
'''


def test_a_marker_on_an_in_place_item_assignment_captures_the_variable_it_changed(tmp_path):
    code, checks = traced(tmp_path, LSA)
    assert code == 0, checks[""]
    assert "S12" in checks and "S13" in checks


@pytest.mark.parametrize("line", ["print(x)  # BREAKPOINT S12\n", "f()[0] = 1  # BREAKPOINT S12\n"])
def test_a_line_that_changes_no_variable_is_still_refused(tmp_path, capsys, line):
    script = tmp_path / "bad.py"
    script.write_text("x = [1]\ndef f():\n    return x\n" + line, encoding="utf-8")
    assert main(["trace", str(script), "--out", str(tmp_path / "out")]) == 2
    assert "assigns no variable" in capsys.readouterr().err


def _scores(tmp_path, script: str) -> dict:
    code, checks = traced(tmp_path, script)
    assert code in (0, 1), checks[""]
    return checks


def test_scores_masked_from_themselves_pass_compared_where_not_masked_with_no_tolerance_from_the_mask(tmp_path):
    """The diagonal's −987654321 had been fitted as a relative position bias at offset 0, the comparison's tolerance
    scaled by it (1e+05): any scores passed. It is a mask: left out of the comparison and its scale."""
    checks = _scores(tmp_path, LSA)
    assert checks["S12"]["passed"] is True, checks["S12"]["detail"]
    assert "masked from itself" in checks["S12"]["name"] and "e+05" not in checks["S12"]["detail"]
    assert checks["S13"]["passed"] is True and checks["S14"]["passed"] is True


def test_a_temperature_per_head_is_a_correct_form_reported_with_its_fitted_values(tmp_path):
    trained = LSA.replace("hs ** -0.5 * torch.ones(h)", "torch.tensor([0.25, 0.4, 0.3, 0.5])")
    checks = _scores(tmp_path, trained)
    assert checks["S12"]["passed"] is True, checks["S12"]["detail"]
    assert "temperature per head" in checks["S12"]["name"] and "0.25, 0.4, 0.3, 0.5" in checks["S12"]["name"]


def test_the_self_mask_written_with_a_large_positive_value_is_named(tmp_path):
    checks = _scores(tmp_path, LSA.replace("= -987654321", "= 987654321"))
    assert checks["S12"]["passed"] is False, checks["S12"]["detail"]
    assert checks["S12"]["evidence"]["name"] == "masked with a large positive value"


@pytest.mark.parametrize("scale", ["1.0", "0.25"])
def test_one_scale_in_every_head_beside_a_self_mask_is_unrecognised_never_green_nor_red(tmp_path, scale):
    """The temperature left out (SPT_LSA's B2: Q·Kᵀ unscaled where not masked), or another one value in every head:
    a temperature per head still at its initial value gives the same scores, and its parameter is not read here."""
    checks = _scores(tmp_path, LSA.replace("hs ** -0.5 * torch.ones(h)", f"{scale} * torch.ones(h)"))
    assert checks["S12"]["passed"] is None and checks["S12"]["status"] == "unrecognised", checks["S12"]["detail"]
    assert "cannot tell them apart" in checks["S12"]["detail"]


# T5's learned relative bias (one value per head and key − query offset) added before the diagonal is masked
BIASED = LSA.replace("    dots[:, :, diagonal", "    dots = dots + OFFSETS\n    dots[:, :, diagonal").replace(
    "diagonal = torch", "table = torch.randn(h, 2 * N - 1)\nOFFSET_INDEX = torch.arange(N)[None, :] - torch.arange(N)"
    "[:, None] + N - 1\ndiagonal = torch")


def test_a_relative_bias_beside_a_self_mask_is_fitted_where_not_masked(tmp_path):
    checks = _scores(tmp_path, BIASED.replace("OFFSETS", "table[:, OFFSET_INDEX]"))
    assert checks["S12"]["passed"] is True, checks["S12"]["detail"]
    assert "relative position bias" in checks["S12"]["name"] and "masked from itself" in checks["S12"]["name"]


def test_scores_off_beside_a_self_mask_get_no_tolerance_from_the_masking_value(tmp_path):
    """A bias fitted to masking-size entries set no scale: scores 3 apart from any form fail where they are not
    masked (round eighteen's G13 had the same tolerance from a masking value matched exactly)."""
    checks = _scores(tmp_path, BIASED.replace("OFFSETS", "torch.randn(B, h, N, N) * 3"))
    assert checks["S12"]["passed"] is not True, checks["S12"]["detail"]
    assert "e+05" not in checks["S12"]["detail"]


# XCiT's projections: three Linears on unmarked lines, each output split into heads kept third
HEADS_THIRD = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, H = 2, 9, 32, 4


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.queries_projection, self.keys_projection, self.values_projection = (nn.Linear(C, C) for _ in range(3))
        self.num_heads = H

    def forward(self, x):
        keys = self.keys_projection(x)
        values = self.values_projection(x)
        queries = self.queries_projection(x)
        keys = keys.reshape(B, N, self.num_heads, C // self.num_heads)  # BREAKPOINT S10
        queries = queries.reshape(B, N, self.num_heads, C // self.num_heads)  # BREAKPOINT S09
        values = values.reshape(B, N, self.num_heads, C // self.num_heads)  # BREAKPOINT S11
        return queries, keys, values


attention = Attention()
with torch.no_grad():
    x = torch.randn(B, N, C)  # BREAKPOINT S08
    q, k, v = attention(x)
'''


def test_projections_split_into_heads_kept_third_are_read_with_the_heads_the_width_gives(tmp_path):
    checks = _scores(tmp_path, HEADS_THIRD)
    for label in ("S09", "S10", "S11"):
        assert checks[label]["passed"] is True, (label, checks[label]["detail"])


def test_keys_from_the_query_projection_kept_heads_third_are_named(tmp_path):
    checks = _scores(tmp_path, HEADS_THIRD.replace("keys = self.keys_projection(x)", "keys = self.queries_projection(x)"))
    assert checks["S10"]["passed"] is False, checks["S10"]["detail"]
    assert checks["S10"]["evidence"]["name"] == "computed from another tensor"
