"""A post-norm step whose marked line normalises a sublayer's output alone, ``src = self.norm1(self.attn(src, src,
src)[0])``, the residual dropped (issue 40: DETR's B1/B3 in their one-line form): the step's check was bound to the
LayerNorm's input as the sum's stand-in and passed as a LayerNorm of whatever it read. Where the block's input is a
captured step and the attention module the line called gave exactly the LayerNorm's input, the step fails with the
bug form "residual dropped"; the correct sum passes, batch-first and sequence-first. A tiny own script, no upstream
file."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

SCRIPT = """\
import torch
import torch.nn as nn


class EncoderLayer(nn.Module):
    def __init__(self, C=16):
        super().__init__()
        self.attn = nn.MultiheadAttention(C, 2, batch_first=BATCH_FIRST)
        self.norm1 = nn.LayerNorm(C)

    def forward(self, src):  # Snapshot #6 src
        src = self.norm1(src + self.attn(src, src, src)[0])  # Snapshot #15
        return src


torch.manual_seed(0)
with torch.no_grad():
    EncoderLayer().eval()(torch.randn(SHAPE))
"""
DROPPED = {"self.norm1(src + self.attn(src, src, src)[0])": "self.norm1(self.attn(src, src, src)[0])"}
LAYOUTS = [("True", "2, 6, 16"), ("False", "6, 2, 16")]


def _script(batch_first: str, shape: str, replaced: dict[str, str] | None = None) -> str:
    text = SCRIPT.replace("BATCH_FIRST", batch_first).replace("SHAPE", shape)
    for old, new in (replaced or {}).items():
        assert old in text
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize("batch_first,shape", LAYOUTS)
def test_the_normalised_residual_sum_passes(tmp_path, batch_first, shape):
    code, checks = traced(tmp_path, _script(batch_first, shape))
    assert code == 0, checks[""]
    assert checks["#15"]["passed"] is True, checks["#15"]


@pytest.mark.parametrize("batch_first,shape", LAYOUTS)
def test_a_layer_norm_of_the_sublayer_output_alone_is_the_residual_dropped(tmp_path, batch_first, shape):
    code, checks = traced(tmp_path, _script(batch_first, shape, DROPPED))
    assert code == 1, checks[""]
    assert checks[""]["first_failure"].startswith("#15"), checks[""]
    assert checks["#15"]["evidence"]["name"] == "residual dropped", checks["#15"]
    assert "MultiheadAttention the line called alone" in checks["#15"]["evidence"]["message"], checks["#15"]


# DETR's own form: the sum an unmarked statement above the marked LayerNorm, through a Dropout (issue 40, B1/B3)
FED = """\
import torch
import torch.nn as nn


class EncoderLayer(nn.Module):
    def __init__(self, C=16):
        super().__init__()
        self.attn = nn.MultiheadAttention(C, 2, batch_first=BATCH_FIRST)
        self.norm1 = nn.LayerNorm(C)
        self.dropout1 = nn.Dropout(0.1)

    def forward(self, src):  # Snapshot #6 src
        src2 = self.attn(src, src, src)[0]
        src = src + self.dropout1(src2)
        src = self.norm1(src)  # Snapshot #15
        return src


torch.manual_seed(0)
with torch.no_grad():
    EncoderLayer().MODE()(torch.randn(SHAPE))
"""
FED_DROPPED = {"src = src + self.dropout1(src2)": "src = self.dropout1(src2)"}
MODES = [(mode, *layout) for mode in ("eval", "train") for layout in LAYOUTS]


def _fed(mode: str, batch_first: str, shape: str, replaced: dict[str, str] | None = None) -> str:
    text = FED.replace("MODE", mode).replace("BATCH_FIRST", batch_first).replace("SHAPE", shape)
    for old, new in (replaced or {}).items():
        assert old in text
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize("mode,batch_first,shape", MODES)
def test_a_sum_made_by_the_statement_feeding_the_layer_norm_passes(tmp_path, mode, batch_first, shape):
    code, checks = traced(tmp_path, _fed(mode, batch_first, shape))
    assert code == 0, checks[""]
    assert checks["#15"]["passed"] is True, checks["#15"]


@pytest.mark.parametrize("mode,batch_first,shape", MODES)
def test_a_dropout_of_the_sublayer_alone_feeding_the_layer_norm_is_the_residual_dropped(tmp_path, mode, batch_first,
                                                                                         shape):
    """The Dropout's own output is what the LayerNorm read, whatever mask a training-mode dropout drew."""
    code, checks = traced(tmp_path, _fed(mode, batch_first, shape, FED_DROPPED))
    assert code == 1, checks[""]
    assert checks[""]["first_failure"].startswith("#15"), checks[""]
    assert checks["#15"]["evidence"]["name"] == "residual dropped", checks["#15"]
    # in eval mode the Dropout returns the attention's output itself: either call named is the sublayer's output alone
    dropout, attention = ("the output of the Dropout line 14 (the statement",
                          "the output of the MultiheadAttention line 13 (the statement")
    said = (dropout,) if mode == "train" else (dropout, attention)
    assert any(words in checks["#15"]["evidence"]["message"] for words in said), checks["#15"]
