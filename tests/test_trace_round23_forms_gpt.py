"""Round twenty-three's GPT-side forms (tests/trace_fresh/ROUND23_GPT.md, "What the checks missed"), built in a script
of our own shaped as the student's encoder–decoder is (henok3878's: one attention class with q/k/v Linears on lines of
their own, post-norm layers with a LayerNorm class of the author's own, unbiased std and ε added to it, the paper's
table in an nn.Sequential): each planted bug the checks did not name, named at its own step, and the correct forms
beside it kept green.

1. The residual dropped on a post-norm line, ``x = self.norm_attn(self.dropout_attn(attn_out))``, the sublayer output
   made on the line before: the LayerNorm (a class of one's own) read the Dropout's output alone, where correct code
   gives it the block input plus it (trace/reading/sublayer_alone_normed.py): "residual dropped".
2. A LayerNorm class that does not subtract the mean (``weight * x / (std + eps) + bias``): "mean not subtracted"
   (checks/variance_norm.py); an RMSNorm class with a gain and a bias, x/√(mean(x²) + ε), a correct member of the
   family, green.
3. The sinusoid table with sin where cos belongs (``table[:, 1::2] = torch.sin(...)``): "sin where cos belongs"
   (reports/encoder_decoder/checks.py, SinusoidalPositions).
4. A GPT's last-position logits (modded-nanogpt's ``self.lm_head(x[:, [-1], :])``, on tests/variants/bases/gpt.py)
   computed from position 0's row: "the wrong position" (trace/reading/last_position.py ``wrong_row_read``), the last
   row green.
5. modded-nanogpt's attention, on the same base: q, k and v viewed per head and marked, then rotary positions with
   every angle negated (``x1·cos + x2·sin``) from bfloat16 tables, then a QK-norm (``F.rms_norm`` per head), then
   SDPA: a member of the rotary family (checks/rotary.py), the context and the merge green; the heads then merged
   without the transpose named at the merge (hidden before: the context itself was unrecognised)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import trace_source as traced

GPT = (Path(__file__).parent / "variants" / "bases" / "gpt.py").read_text(encoding="utf-8")
FULL_LOGITS = "logits = self.lm_head(x)  # BREAKPOINT G26"

ENCODER_DECODER = '''\
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
D, H, FF, L = 32, 4, 64, 2


class OwnLayerNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        std = x.std(dim=-1, keepdim=True)
        return self.weight * (x - mean) / (std + self.eps) + self.bias


class Positions(nn.Module):
    def __init__(self, length, d):
        super().__init__()
        table = torch.zeros(length, d)
        pos = torch.arange(0, length, dtype=torch.float).unsqueeze(1)
        div = torch.exp(-math.log(10000.0) / d * torch.arange(0, d, 2))
        table[:, 0::2] = torch.sin(pos * div)
        table[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("table", table.unsqueeze(0))

    def forward(self, x):
        return x + self.table[:, :x.size(1), :]


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.hd = D // H
        self.q_proj, self.k_proj, self.v_proj = (nn.Linear(D, D, bias=False) for _ in range(3))
        self.out_proj = nn.Linear(D, D)

    def forward(self, x, kv, mask=None):
        B, T, S = x.size(0), x.size(1), kv.size(1)
        query = self.q_proj(x)  # Snapshot #7 or #21 or #30
        key = self.k_proj(kv)  # Snapshot #8 or #22 or #31
        value = self.v_proj(kv)  # Snapshot #9 or #23 or #32
        query = query.view(B, T, H, self.hd).transpose(1, 2)  # Snapshot #12 or #27
        key = key.view(B, S, H, self.hd).transpose(1, 2)  # Snapshot #12 or #27
        value = value.view(B, S, H, self.hd).transpose(1, 2)  # Snapshot #12 or #27
        scores = (query @ key.transpose(-2, -1)) / math.sqrt(self.hd)  # Snapshot #10 or #24 or #33
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        attn = F.softmax(scores, dim=-1)  # Snapshot #11 or #26 or #34
        out = (attn @ value).transpose(1, 2).contiguous().view(B, T, D)  # Snapshot #13 or #28 or #35
        return self.out_proj(out)


class FeedForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1, self.linear2 = nn.Linear(D, FF), nn.Linear(FF, D)
        self.relu, self.dropout = nn.ReLU(), nn.Dropout(0.1)

    def forward(self, x):
        output1 = self.relu(self.linear1(x))  # Snapshot #17 or #38
        return self.linear2(self.dropout(output1))  # Snapshot #18 or #39


class EncoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn, self.ffn = Attention(), FeedForward()
        self.dropout_attn, self.dropout_ffn = nn.Dropout(0.1), nn.Dropout(0.1)
        self.norm_attn, self.norm_ffn = OwnLayerNorm(D), OwnLayerNorm(D)

    def forward(self, x, mask):
        attn_out = self.self_attn(x, x, mask=mask)  # Snapshot #6 x
        x = self.norm_attn(x + self.dropout_attn(attn_out))  # Snapshot #15
        ffn_out = self.ffn(x)
        x = self.norm_ffn(x + self.dropout_ffn(ffn_out))  # Snapshot #19
        return x


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn, self.cross_attn, self.ffn = Attention(), Attention(), FeedForward()
        self.drop1, self.drop2, self.drop3 = nn.Dropout(0.1), nn.Dropout(0.1), nn.Dropout(0.1)
        self.norm1, self.norm2, self.norm3 = OwnLayerNorm(D), OwnLayerNorm(D), OwnLayerNorm(D)

    def forward(self, x, memory, src_mask, tgt_mask):
        self_attn = self.self_attn(x, x, mask=tgt_mask)  # Snapshot #20 x
        x = self.norm1(x + self.drop1(self_attn))  # Snapshot #29
        cross = self.cross_attn(x, memory, mask=src_mask)
        x = self.norm2(x + self.drop2(cross))  # Snapshot #36
        ffn_out = self.ffn(x)
        x = self.norm3(x + self.drop3(ffn_out))  # Snapshot #40
        return x


class Embed(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.embedding = nn.Embedding(vocab, D)

    def forward(self, ids):
        return self.embedding(ids) * math.sqrt(D)  # Snapshot #4


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_embed = nn.Sequential(Embed(48), Positions(16, D), nn.Dropout(0.1))
        self.tgt_embed = nn.Sequential(Embed(40), Positions(16, D), nn.Dropout(0.1))
        self.encoder = nn.ModuleList([EncoderLayer() for _ in range(L)])
        self.decoder = nn.ModuleList([DecoderLayer() for _ in range(L)])
        self.output_proj = nn.Linear(D, 40, bias=False)
        self.output_proj.weight = self.tgt_embed[0].embedding.weight

    def forward(self, src, tgt, src_mask, tgt_mask):
        src_emb = self.src_embed(src)  # Snapshot #5
        x = src_emb
        for layer in self.encoder:
            x = layer(x, src_mask)
        memory = x
        y = self.tgt_embed(tgt)
        for layer in self.decoder:
            y = layer(y, memory, src_mask, tgt_mask)
        logits = self.output_proj(y)  # Snapshot #42
        return logits


model = Model().eval()
src = torch.randint(1, 48, (2, 7))  # Snapshot #1
src[1, -2:] = 0
tgt = torch.randint(1, 40, (2, 6))  # Snapshot #2
src_mask = (src != 0).unsqueeze(1).unsqueeze(2)
tgt_mask = (tgt != 0).unsqueeze(1).unsqueeze(2) & torch.tril(torch.ones(6, 6)).bool()  # Snapshot #25
with torch.no_grad():
    logits = model(src, tgt, src_mask, tgt_mask)
'''

RESIDUAL = "x = self.norm_attn(x + self.dropout_attn(attn_out))"
LAYER_NORM = "return self.weight * (x - mean) / (std + self.eps) + self.bias"
COSINES = "table[:, 1::2] = torch.cos(pos * div)"


def _details(checks: dict[str, dict]) -> dict[str, str]:
    return {label: check["detail"] for label, check in checks.items() if label and check["passed"] is not True}


def test_the_students_encoder_decoder_is_green_at_every_post_norm_step_and_the_table(tmp_path):
    code, checks = traced(tmp_path, ENCODER_DECODER)
    assert code == 0, _details(checks)
    for label in ("#5", "#15", "#19", "#29", "#36", "#40"):
        assert checks[label]["passed"] is True, (label, checks[label]["detail"])
    assert "the Annotated Transformer's LayerNorm" in checks["#15"]["detail"]


def test_a_post_norm_line_that_normalises_the_dropped_out_sublayer_output_alone_names_the_residual_dropped(tmp_path):
    dropped = "x = self.norm_attn(self.dropout_attn(attn_out))"
    code, checks = traced(tmp_path, ENCODER_DECODER.replace(RESIDUAL, dropped))
    assert code == 1 and checks[""]["first_failure"].startswith("#15"), checks[""]
    assert checks["#15"]["evidence"]["name"] == "residual dropped", checks["#15"]["detail"]
    assert "without x (#6)" in checks["#15"]["detail"], checks["#15"]["detail"]


def test_a_layer_norm_class_without_the_mean_subtracted_is_named_at_the_first_post_norm_step(tmp_path):
    code, checks = traced(tmp_path, ENCODER_DECODER.replace(LAYER_NORM, "return self.weight * x / (std + self.eps) "
                                                                        "+ self.bias"))
    assert code == 1 and checks[""]["first_failure"].startswith("#15"), checks[""]
    for label in ("#15", "#19", "#29", "#36", "#40"):
        assert checks[label]["evidence"]["name"] == "mean not subtracted", (label, checks[label]["detail"])
    assert "does not subtract the mean" in checks["#15"]["detail"]


def test_the_nn_layer_norm_formula_without_the_mean_is_named_too(tmp_path):
    root = "return self.weight * x / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + self.eps) + self.bias"
    code, checks = traced(tmp_path, ENCODER_DECODER.replace(LAYER_NORM, root))
    assert code == 1 and checks[""]["first_failure"].startswith("#15"), checks[""]
    assert checks["#15"]["evidence"]["name"] == "mean not subtracted", checks["#15"]["detail"]


def test_an_rms_norm_class_with_a_gain_and_a_bias_is_a_correct_member_of_the_family(tmp_path):
    rms = "return self.weight * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) + self.bias"
    code, checks = traced(tmp_path, ENCODER_DECODER.replace(LAYER_NORM, rms))
    assert code == 0, _details(checks)
    for label in ("#15", "#19", "#29", "#36", "#40"):
        assert checks[label]["passed"] is True, (label, checks[label]["detail"])
    assert "recomputed an RMSNorm of input + sublayer output" in checks["#15"]["detail"], checks["#15"]["detail"]


def test_a_sinusoid_table_with_sin_where_cos_belongs_is_named_at_the_positions_step(tmp_path):
    code, checks = traced(tmp_path, ENCODER_DECODER.replace(COSINES, "table[:, 1::2] = torch.sin(pos * div)"))
    assert code == 1 and checks[""]["first_failure"].startswith("#5"), checks[""]
    assert checks["#5"]["evidence"]["name"] == "sin where cos belongs", checks["#5"]["detail"]
    assert "the paper's table (sin and cos interleaved) with every cosine replaced by a sine" in checks["#5"]["detail"]


def test_last_position_logits_from_the_last_row_are_green(tmp_path):
    code, checks = traced(tmp_path, GPT.replace(FULL_LOGITS, "logits = self.lm_head(x[:, [-1], :])  # BREAKPOINT G26"))
    assert code == 0, _details(checks)
    assert checks["G26"]["passed"] is True and checks["G27"]["passed"] is True, checks["G26"]["detail"]


def test_last_position_logits_from_position_0_are_the_wrong_position(tmp_path):
    code, checks = traced(tmp_path, GPT.replace(FULL_LOGITS, "logits = self.lm_head(x[:, [0], :])  # BREAKPOINT G26"))
    assert code == 1 and checks[""]["first_failure"].startswith("G26"), checks[""]
    assert checks["G26"]["evidence"]["name"] == "the wrong position", checks["G26"]["detail"]
    assert "computed from position 0's row of x (G25), not the last position's (5)" in checks["G26"]["detail"]


QK_NORMED = '''\
    def forward(self, x):
        B, T, C = x.size()
        qkv = self.c_attn(x)  # BREAKPOINT G07
        q, k, v = qkv.split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head)  # BREAKPOINT G08
        k = k.view(B, T, self.n_head, C // self.n_head)  # BREAKPOINT G09
        v = v.view(B, T, self.n_head, C // self.n_head)  # BREAKPOINT G10
        cos, sin = rotary_tables(T, C // self.n_head)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        q, k = F.rms_norm(q, (q.size(-1),)), F.rms_norm(k, (k.size(-1),))
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           is_causal=True)  # BREAKPOINT G15
        y = y.transpose(1, 2).contiguous().view_as(x)  # BREAKPOINT G16
        y = self.resid_dropout(self.c_proj(y))  # BREAKPOINT G17
        return y


def rotary_tables(T, hs):
    inv_freq = 1.0 / (10000 ** (torch.arange(0, hs, 2).float() / hs))
    freqs = torch.outer(torch.arange(T).float(), inv_freq)
    return freqs.cos().bfloat16()[None, :, None, :], freqs.sin().bfloat16()[None, :, None, :]


def apply_rotary(x, cos, sin):
    d = x.shape[3] // 2
    x1, x2 = x[..., :d], x[..., d:]
    return torch.cat([x1 * cos + x2 * sin, x1 * (-sin) + x2 * cos], 3).type_as(x)


'''
MERGE = "y = y.transpose(1, 2).contiguous().view_as(x)  # BREAKPOINT G16"


def _qk_normed() -> str:
    start, end = GPT.index("    def forward(self, x):\n        B, T, C = x.size()"), GPT.index("class MLP")
    return GPT[:start] + QK_NORMED + GPT[end:]


def test_rotary_with_negated_angles_from_bfloat16_tables_then_a_qk_norm_is_a_rotary_member(tmp_path):
    code, checks = traced(tmp_path, _qk_normed())
    assert code == 0, _details(checks)
    for label in ("G15", "G16"):
        assert checks[label]["passed"] is True, (label, checks[label]["detail"])
        assert "every angle negated, bfloat16 tables, then a QK-norm" in checks[label]["detail"], checks[label]


def test_heads_merged_without_the_transpose_after_a_qk_normed_rotary_attention_are_named_at_the_merge(tmp_path):
    code, checks = traced(tmp_path, _qk_normed().replace(MERGE, "y = y.contiguous().view_as(x)  # BREAKPOINT G16"))
    assert code == 1 and checks[""]["first_failure"].startswith("G16"), checks[""]
    assert checks["G16"]["evidence"]["name"] == "heads merged without moving the axis back", checks["G16"]["detail"]
