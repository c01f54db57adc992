"""Forms round twelve's fresh ViTs showed `trace` missing (tests/trace_fresh/ROUND12_VIT.md, "What is left"), each
held by a tiny script of our own (none from the upstream code): correct variants pass, the planted bug is named first
at its own step with its form.

- the pooled row taken inside the head's call with no final sequence captured (`self.head(x[:, -1])`, no final norm
  of the sequence marked): the pooled row's claims are checked on what the head was given against the sequence the
  line itself read (its local `x`), so the wrong token pooled is named at S25;
- the class token appended after the patches (`torch.cat((x, cls), dim=1)`): correct where the last row is pooled,
  named where row 0, a patch, is pooled, the class token read from the step that shows it (S05) or, where none does,
  from the parameter the line read in the `cat`.
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
