"""Forms round ten's fresh ViT implementations left unnamed (tests/trace_fresh/ROUND10_VIT.md, "What is left"), each
built here on its own, none from the upstream code: a patch convolution's grid flattened column by column
(``proj(x).transpose(2, 3).flatten(2)``: MAE B6), and a patch left out of a mean pooling in a model without a class
token (``fc_norm(x[:, 1:].mean(1))``: MAE B5). Correct code passes; each bug is named first with its form; the same
mean in a model whose sequence holds one row more than the patches (a class token, captured or not) is no bug. And a
pre-norm decoder whose LayerNorms run on unmarked lines (JoeyNMT's): an attention's queries computed from the stream
itself where its LayerNorm belongs (JoeyNMT B4: the cross-attention's, from the un-normalised sum), named from the
other projections given a LayerNorm of a stream."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

POOLED_VIT = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, CH, SIDE, P, C = 2, 3, 16, 4, 16


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Conv2d(CH, C, P, stride=P)
        self.cls_token = nn.Parameter(torch.randn(1, 1, C))
        self.norm, self.fc_norm = nn.LayerNorm(C), nn.LayerNorm(C)
        self.head = nn.Linear(C, 10)

    def forward(self, image):  # BREAKPOINT S01
        x = {embed}  # BREAKPOINT S04
        x = {tokens}
        x = self.norm(x)  # BREAKPOINT S23
        pooled = {pool}  # BREAKPOINT S24
        return self.head(pooled)


with torch.no_grad():
    model = Model().eval()
    model.fc_norm.weight.add_(0.1 * torch.randn(C))
    model(torch.randn(B, CH, SIDE, SIDE))
'''

ROW_BY_ROW, COLUMN_BY_COLUMN = ("self.proj(image).flatten(2).transpose(1, 2)",
                                "self.proj(image).transpose(2, 3).flatten(2).transpose(1, 2)")
PATCHES_ONLY, WITH_CLASS_TOKEN = "x", "torch.cat([self.cls_token.expand(B, -1, -1), x], dim=1)"
EVERY_ROW, FIRST_LEFT_OUT = "self.fc_norm(x.mean(1))", "self.fc_norm(x[:, 1:].mean(1))"


def _vit(embed: str = ROW_BY_ROW, tokens: str = PATCHES_ONLY, pool: str = EVERY_ROW) -> str:
    return POOLED_VIT.format(embed=embed, tokens=tokens, pool=pool)


@pytest.mark.parametrize(("tokens", "pool"), [(PATCHES_ONLY, EVERY_ROW), (WITH_CLASS_TOKEN, FIRST_LEFT_OUT)],
                         ids=["mean of every patch", "the class token left out of the mean"])
def test_mean_pooling_of_the_patches_and_a_row_by_row_patch_grid_pass(tmp_path, tokens, pool):
    code, checks = traced(tmp_path, _vit(tokens=tokens, pool=pool))
    assert checks["S04"]["passed"] is True, checks["S04"]["detail"]
    if tokens == PATCHES_ONLY:  # the class token not captured: its row left out is no form S24 knows, nor a bug
        assert code == 0 and checks["S24"]["passed"] is True, checks["S24"]["detail"]
    else:
        assert code == 0 and checks["S24"]["passed"] is not False, checks["S24"]["detail"]


@pytest.mark.parametrize(("embed", "pool", "named", "form"), [
    (COLUMN_BY_COLUMN, EVERY_ROW, "S04", "patches taken column by column"),
    (ROW_BY_ROW, FIRST_LEFT_OUT, "S24", "the wrong rows pooled"),
    (ROW_BY_ROW, "self.fc_norm(x[:, :-1].mean(1))", "S24", "the wrong rows pooled"),
    (ROW_BY_ROW, "x[:, 1:].mean(1)", "S24", "the wrong rows pooled"),
], ids=["grid flattened column by column", "the first patch left out of the mean", "the last patch left out",
        "the first patch left out, no LayerNorm of the mean"])
def test_a_patch_order_or_a_pooling_bug_is_named_first_with_its_form(tmp_path, embed, pool, named, form):
    code, checks = traced(tmp_path, _vit(embed=embed, pool=pool))
    assert code == 1 and checks[""]["first_failure"].split(" ")[0] == named, checks[""]["first_failure"]
    assert checks[named]["evidence"]["name"] == form, checks[named]


PRE_NORM_DECODER = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
B, S, T, C, H, M = 2, 7, 5, 16, 2, 32
HS = C // H


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_layer, self.k_layer = nn.Linear(C, C), nn.Linear(C, C)
        self.v_layer, self.out = nn.Linear(C, C), nn.Linear(C, C)

    def forward(self, q, k, v, causal):
        k = self.k_layer(k)  # Snapshot #22 or #31
        v = self.v_layer(v)  # Snapshot #23 or #32
        q = self.q_layer(q)  # Snapshot #21 or #30
        lq, lk = q.shape[1], k.shape[1]
        q, k, v = (t.view(B, -1, H, HS).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / HS ** 0.5
        if causal:
            scores = scores.masked_fill(~torch.ones(lq, lk).tril().bool(), float("-inf"))
        probs = scores.softmax(-1)
        ctx = (probs @ v).transpose(1, 2).reshape(B, lq, C)
        return self.out(ctx)


class FeedForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer_norm = nn.LayerNorm(C)
        self.fc1, self.fc2 = nn.Linear(C, M), nn.Linear(M, C)

    def forward(self, x):
        residual = x
        x = self.layer_norm(x)  # Snapshot #37
        return self.fc2(F.relu(self.fc1(x))) + residual  # Snapshot #40


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.x_layer_norm, self.dec_layer_norm = nn.LayerNorm(C), nn.LayerNorm(C)
        self.self_att, self.cross_att = Attention(), Attention()
        self.ff = FeedForward()

    def forward(self, x, memory):  # Snapshot #20 x
        residual = x
        x = self.x_layer_norm(x)
        h1 = self.self_att({self_query}, x, x, True)
        h1 = h1 + residual  # Snapshot #29
        h1_residual = h1
        h1 = self.dec_layer_norm(h1)
        h2 = self.cross_att({cross_query}, memory, memory, False)
        h2 = h2 + h1_residual  # Snapshot #36
        return self.ff(h2)


with torch.no_grad():
    layer = DecoderLayer().eval()
    for norm in (layer.x_layer_norm, layer.dec_layer_norm, layer.ff.layer_norm):
        norm.weight.add_(0.1 * torch.randn(C))
    layer(torch.randn(B, T, C), torch.randn(B, S, C))
'''


def test_a_pre_norm_decoder_whose_layernorms_are_on_unmarked_lines_passes(tmp_path):
    code, checks = traced(tmp_path, PRE_NORM_DECODER.format(self_query="x", cross_query="h1"))
    assert code == 0, checks[""]["first_failure"]
    for label in ("#21", "#29", "#30", "#36"):
        assert checks[label]["passed"] is True, (label, checks[label]["detail"])


STREAM_NOT_NORMALISED, ANOTHER_TENSOR = "sublayer given the stream, not its LayerNorm", "computed from another tensor"


@pytest.mark.parametrize(("self_query", "cross_query", "named", "forms"), [
    ("x", "h1_residual", "#30", (STREAM_NOT_NORMALISED,)),
    # the other projections of its line read the LayerNorm: the queries' input is named as another tensor too
    ("residual", "h1", "#21", (STREAM_NOT_NORMALISED, ANOTHER_TENSOR)),
], ids=["the cross-attention's queries from the un-normalised sum", "the self-attention's queries from the stream"])
def test_queries_from_the_un_normalised_stream_of_a_pre_norm_block_are_named_first(tmp_path, self_query, cross_query,
                                                                                    named, forms):
    code, checks = traced(tmp_path, PRE_NORM_DECODER.format(self_query=self_query, cross_query=cross_query))
    assert code == 1 and checks[""]["first_failure"].split(" ")[0] == named, checks[""]["first_failure"]
    assert checks[named]["evidence"]["name"] in forms, checks[named]
