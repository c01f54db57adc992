"""A feed-forward written on one marked line, ``self.linear2(self.dropout(self.activation(self.linear1(x))))``, whose
first Linear's output no snapshot shows (issue 40: DETR's #18): the second Linear's input was read from its own call, so
the activation left out passed as "fc2 applied to its input" (or stayed unrecognised). With both Linear calls recorded,
the second's input must be an activation of the family of the first's output (fitted, the catalogue's ReLU first);
the identity where no activation fits is the bug form "the activation left out". A tiny own script, no upstream file."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

SCRIPT = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class EncoderLayer(nn.Module):
    def __init__(self, C=16, hidden=32):
        super().__init__()
        self.attn = nn.MultiheadAttention(C, 2)
        self.linear1, self.linear2 = nn.Linear(C, hidden), nn.Linear(hidden, C)
        self.norm1, self.norm2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.dropout = nn.Dropout(0.1)
        self.activation = ACTIVATION

    def forward(self, src):
        src2 = self.attn(src, src, value=src)[0]
        src = src + src2
        src = self.norm1(src)  # Snapshot #15
        src2 = self.linear2(self.dropout(self.activation(self.linear1(src))))  # Snapshot #18
        return src


torch.manual_seed(0)
layer = EncoderLayer().eval()
with torch.no_grad():
    layer(torch.randn(6, 2, 16))
"""
LEFT_OUT = {"self.linear2(self.dropout(self.activation(self.linear1(src))))":
            "self.linear2(self.dropout(self.linear1(src)))"}


def _script(activation: str, replaced: dict[str, str] | None = None) -> str:
    text = SCRIPT.replace("ACTIVATION", activation)
    for old, new in (replaced or {}).items():
        assert old in text
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize("activation,named", [("F.relu", "ReLU"), ("F.gelu", "GELU"), ("nn.SiLU()", "SiLU")])
def test_the_activation_between_the_two_linears_is_fitted_from_their_calls(tmp_path, activation, named):
    code, checks = traced(tmp_path, _script(activation))
    assert code == 0, checks[""]
    assert checks["#18"]["passed"] is True, checks["#18"]
    assert f"applied to {named} of the first Linear's output" in checks["#18"]["name"], checks["#18"]


def test_the_activation_left_out_is_named(tmp_path):
    code, checks = traced(tmp_path, _script("F.relu", LEFT_OUT))
    assert code == 1, checks[""]
    assert checks[""]["first_failure"].startswith("#18"), checks[""]
    assert checks["#18"]["evidence"]["name"] == "the activation left out", checks["#18"]
    assert "ReLU changes" in checks["#18"]["evidence"]["message"], checks["#18"]


def test_another_function_between_the_linears_is_unrecognised_never_red(tmp_path):
    code, checks = traced(tmp_path, _script("(lambda x: x * 2.0 + 1.0)"))
    assert code == 0, checks[""]
    assert checks["#18"]["passed"] is not True and "evidence" not in (checks["#18"] or {}), checks["#18"]
