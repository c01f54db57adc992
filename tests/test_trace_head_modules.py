"""One module per attention head (the form students copy most from Karpathy's "Let's build GPT" lecture: a `Head`
class, run by a ModuleList, the heads joined by ``torch.cat([h(x) for h in self.heads], dim=-1)``): each per-head step
is one head at each hit of its line and checks as such; the concatenation (G16) is checked against its per-head lines'
hits of the same layer stacked on the heads axis (trace/reading/head_modules.py), where it had read one head against
the whole width and been unrecognised. A script of our own."""

from __future__ import annotations

import json

import pytest

from tests.conftest import trace_source as traced
from transformer_trace.checks import UNRECOGNISED
from transformer_trace.cli import main

PER_HEAD_GPT = '''\
import torch
import torch.nn as nn
from torch.nn import functional as F

torch.manual_seed(7)
vocab, context, width, n_heads, n_blocks = 50, 16, 32, 4, 2


class Head(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.key = nn.Linear(width, size, bias=False)
        self.query = nn.Linear(width, size, bias=False)
        self.value = nn.Linear(width, size, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(context, context)))

    def forward(self, x):
        T = x.shape[1]
        k = self.key(x)  # BREAKPOINT G09
        q = self.query(x)  # BREAKPOINT G08
        wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5  # BREAKPOINT G11
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float("-inf"))  # BREAKPOINT G13
        wei = F.softmax(wei, dim=-1)  # BREAKPOINT G14
        v = self.value(x)  # BREAKPOINT G10
        out = wei @ v  # BREAKPOINT G15
        return out


class MultiHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([Head(width // n_heads) for _ in range(n_heads)])
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        out = JOINED  # BREAKPOINT G16
        return self.proj(out)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.sa, self.ln1 = MultiHead(), nn.LayerNorm(width)

    def forward(self, x):
        return x + self.sa(self.ln1(x))


blocks = nn.Sequential(*[Block() for _ in range(n_blocks)]).eval()
with torch.no_grad():
    y = blocks(torch.randn(2, 8, width))
'''
CONCATENATED = "torch.cat([h(x) for h in self.heads], dim=-1)"


@pytest.mark.parametrize("hit, read", [(1, "hits 1–4"), (2, "hits 5–8")])
def test_heads_of_their_own_modules_are_concatenated_from_their_lines_hits_of_the_layer_shown(tmp_path, hit, read):
    script = tmp_path / "script.py"
    script.write_text(PER_HEAD_GPT.replace("JOINED", CONCATENATED), encoding="utf-8")
    assert main(["trace", str(script), "--out", str(tmp_path / "out"), "--name", "t", "-q", "--hit", str(hit)]) == 0
    checks = {s["label"]: s["check"] for s in json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(
        encoding="utf-8"))["snapshots"] if s["captured"]}
    assert all(check["passed"] is True for check in checks.values()), {k: c["detail"] for k, c in checks.items()}
    assert f"the 4 heads read from {read} of your per-head lines G14 and G10" in checks["G16"]["detail"]


def test_a_concatenation_of_heads_in_no_form_the_checks_know_is_unrecognised_not_red(tmp_path):
    """...and the questions it informs say so in those words, not that it failed (round twenty's CaiT pages had said
    "your S06 failed its check" of an unrecognised step)."""
    code, checks = traced(tmp_path, PER_HEAD_GPT.replace("JOINED", CONCATENATED + " * 2"))
    assert code == 0 and checks["G16"]["status"] == UNRECOGNISED, checks["G16"]["detail"]
    assert "read from hits 1–4" in checks["G16"]["detail"]
    (page,) = (tmp_path / "out" / "t").glob("*/16-heads-concatenated.md")
    text = page.read_text(encoding="utf-8")
    assert "your G16 is unrecognised by its check" in text and "failed its check" not in text


# The encoder-decoder's form of it (round nineteen's EECS 498 homework, DLCV): each head's module makes its own q, k and v
# with a Linear of one head's width (#7-#9: (B, S, hs) at each hit, not the catalogue's (B, S, C)); nobody marks the
# head split (#12), which no code of this form has. The concatenation reads the values from the projection's own hits,
# one head's scores its q and k from the same hit of their lines, and each head's q, k and v are checked as the Linear
# their line called, one head wide, on the input the catalogue names.
PER_HEAD_ENCODER = '''\
import math

import torch
import torch.nn as nn

torch.manual_seed(3)
B, S, C, H = 2, 6, 16, 4


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(C, C // H), nn.Linear(C, C // H), nn.Linear(C, C // H)

    def forward(self, x):
        q = self.q(x)  # Snapshot #7
        k = self.k(x)  # Snapshot #8
        v = self.v(x)  # Snapshot #9
        scores = q @ k.transpose(1, 2) / SCALE  # Snapshot #10
        w = torch.softmax(scores, dim=-1)  # Snapshot #11
        return w @ VALUES


class MultiHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads, self.out = nn.ModuleList([Head() for _ in range(H)]), nn.Linear(C, C)

    def forward(self, x):
        y = torch.cat([head(x) for head in self.heads], dim=-1)  # Snapshot #13
        return self.out(y)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn, self.norm = MultiHead(), nn.LayerNorm(C)

    def forward(self, x):
        summed = x + self.attn(x)
        return self.norm(summed)  # Snapshot #15


layers = nn.Sequential(Layer(), Layer()).eval()
with torch.no_grad():
    x = torch.randn(B, S, C)  # Snapshot #6
    layers(x)
'''


def per_head_encoder(values: str = "v", scale: str = "math.sqrt(q.shape[-1])") -> str:
    return PER_HEAD_ENCODER.replace("VALUES", values).replace("SCALE", scale)


def test_heads_of_their_own_modules_in_an_encoder_read_their_inputs_from_the_projections_own_hits(tmp_path):
    code, checks = traced(tmp_path, per_head_encoder())
    assert code == 0 and checks["#13"]["passed"] is True and checks["#10"]["passed"] is True, checks
    assert "the 4 heads read from hits 1–4 of your per-head lines #11 and #9" in checks["#13"]["detail"]
    assert "one head's #7, #8 read from hit 1 of your per-head lines" in checks["#10"]["detail"]
    for label in ("#7", "#8", "#9"):
        assert checks[label]["passed"] is True, checks[label]["detail"]
        assert "one head's projection, 4 of the 16 channels" in checks[label]["detail"]


def test_a_heads_projection_given_another_input_is_named_at_it(tmp_path):
    code, checks = traced(tmp_path, per_head_encoder().replace("k = self.k(x)", "k = self.k(torch.zeros_like(x))"))
    assert code == 1 and checks["#8"]["passed"] is False, checks["#8"]["detail"]
    assert checks["#8"]["evidence"]["name"] == "computed from another tensor", checks["#8"]["detail"]


def test_a_head_that_weighs_its_keys_for_its_values_is_named_at_the_concatenation(tmp_path):
    code, checks = traced(tmp_path, per_head_encoder(values="k"))
    assert code == 1 and checks["#13"]["passed"] is False, checks["#13"]["detail"]
    assert checks["#13"]["detail"].startswith("your y (#13) is computed from k (#8) where"), checks["#13"]["detail"]


def test_a_head_whose_scores_miss_the_scaling_is_named_at_its_scores(tmp_path):
    code, checks = traced(tmp_path, per_head_encoder(scale="1"))
    assert code == 1 and checks["#10"]["passed"] is False, checks["#10"]["detail"]
    assert checks["#10"]["evidence"]["name"] == "1/√d missing", checks["#10"]["detail"]


def test_a_run_of_one_module_per_head_is_explained_with_the_model_s_head_count_not_the_one_head_each_step_shows(
        tmp_path):
    """Each per-head step shows one head (h = 1 is how the checks read it), but the model has as many heads as the
    concatenation joins: the overview's dimensions, snapshots.json and the explanations count those (they had said "the
    1 heads' contexts are put back side by side" and "56 entries = 1 heads × 28 blocked pairs" of a batch of two)."""
    code, checks = traced(tmp_path, PER_HEAD_GPT.replace("JOINED", CONCATENATED))
    assert code == 0, checks
    report = tmp_path / "out" / "t"
    dims = json.loads((report / "snapshots.json").read_text(encoding="utf-8"))["dims"]
    assert (dims["h"], dims["hs"]) == (4, 8)
    overview = (report / "index.md").read_text(encoding="utf-8")
    assert "| `h` | attention heads | 4 (your heads are modules of their own" in overview
    (joined,) = report.glob("*/16-heads-concatenated.md")
    assert "The 4 heads' contexts are put back side by side" in joined.read_text(encoding="utf-8")
    (masked,) = report.glob("*/13-masked-scores.md")
    assert "with 56 entries = 2 sequences × 1 head ×\n28 blocked pairs" in masked.read_text(encoding="utf-8")



# Grouped-query attention as one module per key/value head (round twenty-two's Sora-mmh ViT, whose trace had ended in an
# internal error): each branch's K and V Linears are one head wide, (B, N, hs), where the catalogue's S10 and S11 are the
# heads split, (B, h, N, hs); the query heads of a group stacked on the leading axis. A step the catalogue has split
# into heads is not read as one head's projection, and a per-head reading whose tensors do not fit a claim leaves the
# step as its own reading found it: a report, never an internal error.
GROUPED_BRANCHES = '''\
import math

import torch
import torch.nn as nn

torch.manual_seed(0)
B, N, C, hs, groups, per_group = 1, 5, 32, 8, 2, 2


class Branch(nn.Module):
    """One key/value head and the query heads that share it."""

    def __init__(self):
        super().__init__()
        self.queries = nn.ModuleList([nn.Linear(C, hs) for _ in range(per_group)])
        self.key, self.value = nn.Linear(C, hs), nn.Linear(C, hs)

    def forward(self, x):
        q = torch.cat([query(x) for query in self.queries], dim=0)  # BREAKPOINT S09
        k = self.key(x)  # BREAKPOINT S10
        v = self.value(x)  # BREAKPOINT S11
        scores = (q @ k.transpose(-2, -1) / math.sqrt(hs)).unsqueeze(0)  # BREAKPOINT S12
        weights = scores.softmax(dim=-1)  # BREAKPOINT S13
        return weights @ v.unsqueeze(1)  # BREAKPOINT S14


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.branches = nn.ModuleList([Branch() for _ in range(groups)])
        self.proj = nn.Linear(C, C)

    def forward(self, x):
        heads = torch.cat([branch(x) for branch in self.branches], dim=1)
        merged = heads.transpose(1, 2).reshape(x.shape[0], x.shape[1], C)
        return self.proj(merged)  # BREAKPOINT S15


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm, self.attn = nn.LayerNorm(C), Attention()

    def forward(self, x):  # BREAKPOINT S08
        return x + self.attn(self.norm(x))  # BREAKPOINT S16


blocks = nn.Sequential(Block(), Block()).eval()
with torch.no_grad():
    blocks(torch.randn(B, N, C))
'''


def test_grouped_query_branches_of_one_key_value_head_each_are_traced_without_an_internal_error(tmp_path):
    code, checks = traced(tmp_path, GROUPED_BRANCHES)
    assert code == 0, checks[""]
    assert {"S09", "S10", "S11", "S12", "S13", "S14", "S15"} <= set(checks)
    assert not any(check["passed"] is False and check["evidence"] for label, check in checks.items() if label), checks


def test_per_head_lines_marked_alone_read_their_first_axis_as_the_batch_not_as_heads(tmp_path):
    # only the per-head lines are marked: (2, 8, 8) fits both "one head of a batch of 2" and "2 heads of one example";
    # the q, k and v lines' Linear called on a (2, 8, 32) stream says which (a projection makes no heads axis)
    script = tmp_path / "script.py"
    script.write_text(PER_HEAD_GPT.replace("JOINED", CONCATENATED).replace("  # BREAKPOINT G16", ""), encoding="utf-8")
    assert main(["trace", str(script), "--out", str(tmp_path / "out"), "--name", "t", "-q"]) == 0
    written = json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))
    checks = {s["label"]: s["check"] for s in written["snapshots"] if s["captured"]}
    assert set(checks) == {"G08", "G09", "G10", "G11", "G13", "G14", "G15"}
    assert all(check["passed"] is True for check in checks.values()), {k: c["detail"] for k, c in checks.items()}
    assert (written["dims"]["B"], written["dims"]["h"], written["dims"]["T"]) == (2, 1, 8)


@pytest.mark.parametrize("reading", ["heads_of_their_own_modules", "heads_on_rows"])
def test_a_reading_of_several_pages_that_fails_leaves_the_steps_as_their_checks_judged_them(tmp_path, monkeypatch,
                                                                                           caplog, reading):
    # round twenty-two's GQA ViT ended in an internal error inside the per-head reading, and no report was written
    from transformer_trace.trace.reading import checking

    def fails(*_args, **_kwargs):
        raise ValueError("not enough values to unpack (expected 4, got 3)")

    monkeypatch.setattr(checking, reading, fails)
    code, checks = traced(tmp_path, PER_HEAD_GPT.replace("JOINED", CONCATENATED))
    assert code == 0, checks[""]
    assert checks["G15"]["passed"] is True, checks["G15"]
    assert any("reading was left out (ValueError: not enough values to unpack" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]
