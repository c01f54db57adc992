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
