"""The layout is read once per run (issue 40, point 3; generator/trace/reading/run_layout.py): whether a script keeps
its tensors batch-first (B, T, C) or sequence-first (T, B, C) is decided from every captured step together, and every
step is read in that one layout, so a sequence-first GPT gets B and T the right way round and every check passes;
where B = T the shapes cannot tell and the modules' own batch_first does; heads folded into the batch axis (B·h, …)
are read as such with the run's B and h; and where steps contradict each other the overview says so in one line.
Each case traces a tiny GPT-style script written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from transformer_trace.cli import main
from transformer_trace.models.legend import Legend, Quotient
from transformer_trace.trace.reading.run_layout import StepShape, read_run_layout

HEADER = '''import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
T, B, C, H, V = {T}, {B}, 32, 4, 256
'''

# attention as nanoGPT writes it, on a sequence-first stream: the heads moved to (B, h, T, hs) for the products
HEADS_SPLIT = '''        q, k, v = self.c_attn(h).split(C, dim=2)
        q = q.view(t, b, H, c // H).permute(1, 2, 0, 3)  # BREAKPOINT G08
        k = k.view(t, b, H, c // H).permute(1, 2, 0, 3)  # BREAKPOINT G09
        v = v.view(t, b, H, c // H).permute(1, 2, 0, 3)  # BREAKPOINT G10
        scores = q @ k.transpose(-2, -1) / math.sqrt(c // H)  # BREAKPOINT G11
        mask = torch.tril(torch.ones(t, t)).view(1, 1, t, t)  # BREAKPOINT G12
        masked = scores.masked_fill(mask == 0, float("-inf"))  # BREAKPOINT G13
        probs = F.softmax(masked, dim=-1)  # BREAKPOINT G14
        context = probs @ v  # BREAKPOINT G15
        concat = context.permute(2, 0, 1, 3).reshape(t, b, c)  # BREAKPOINT G16
        attn_out = self.c_proj(concat)  # BREAKPOINT G17
'''
# as nn.MultiheadAttention computes it inside: the heads folded into the batch axis, (B·h, T, hs), the mask too
HEADS_FOLDED = '''        q, k, v = self.c_attn(h).split(C, dim=2)
        q = q.reshape(t, b * H, c // H).transpose(0, 1)  # BREAKPOINT G08
        k = k.reshape(t, b * H, c // H).transpose(0, 1)  # BREAKPOINT G09
        v = v.reshape(t, b * H, c // H).transpose(0, 1)  # BREAKPOINT G10
        scores = q @ k.transpose(-2, -1) / math.sqrt(c // H)  # BREAKPOINT G11
        mask = torch.tril(torch.ones(t, t)).expand(b * H, t, t)  # BREAKPOINT G12
        masked = scores.masked_fill(mask == 0, float("-inf"))  # BREAKPOINT G13
        probs = F.softmax(masked, dim=-1)  # BREAKPOINT G14
        context = probs @ v  # BREAKPOINT G15
        concat = context.transpose(0, 1).reshape(t, b, c)  # BREAKPOINT G16
        attn_out = self.c_proj(concat)  # BREAKPOINT G17
'''
# nn.MultiheadAttention itself (batch_first=False, its default): the module says the layout
MODULE = '''        mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)  # BREAKPOINT G12
        attn_out, _ = self.c_attn(h, h, h, attn_mask=mask, need_weights=False)  # BREAKPOINT G17
'''
LAYERS = {HEADS_SPLIT: "self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)",
          HEADS_FOLDED: "self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)",
          MODULE: "self.c_attn = nn.MultiheadAttention(C, H)"}

BODY = '''

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        {layers}
        self.c_fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):  # x: (T, B, C), sequence-first
        t, b, c = x.shape
        h = self.ln_1(x)  # BREAKPOINT G06
{attention}        x = x + attn_out  # BREAKPOINT G18
        h2 = self.ln_2(x)  # BREAKPOINT G19
        pre = self.c_fc(h2)  # BREAKPOINT G20
        hidden = F.gelu(pre)  # BREAKPOINT G21
        mlp_out = self.mlp_proj(hidden)  # BREAKPOINT G22
        x = x + mlp_out  # BREAKPOINT G23
        return x


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(16, C)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.ln_f = nn.LayerNorm(C)

    def forward(self, ids):  # ids: (T, B)
        tok = self.wte(ids)  # BREAKPOINT G02
        x = tok + self.wpe(torch.arange(ids.shape[0]))[:, None, :]  # BREAKPOINT G04
        for block in self.blocks:
            x = block(x)  # BREAKPOINT G24
        x = self.ln_f(x)  # BREAKPOINT G25
        return x @ self.wte.weight.t()


model = GPT().eval()
ids = torch.randint(0, V, (T, B))  # BREAKPOINT G01
with torch.no_grad():
    logits = model(ids)  # BREAKPOINT G26
    probs = F.softmax(logits, dim=-1)  # BREAKPOINT G27
'''


def traced(tmp_path: Path, attention: str, T: int, B: int, *changes: tuple[str, str]) -> dict:
    """The sequence-first GPT with ``attention``, T positions and B sequences, traced; its snapshots.json."""
    text = HEADER.format(T=T, B=B) + BODY.replace("{layers}", LAYERS[attention]).replace("{attention}", attention)
    for old, new in changes:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    script = tmp_path / "gpt_sequence_first.py"
    script.write_text(text, encoding="utf-8")
    assert main(["trace", str(script), "--out", str(tmp_path / "out"), "--name", "t", "-q"]) == 0
    return json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))


def layout_row(data: dict) -> dict:
    return next(v for v in data["outcome"]["recognised"]["variants"] if v["what"] == "Layout (every step)")


def turned_steps(data: dict) -> dict[str, str]:
    """Step label -> its layout note, for every captured step whose named shape starts with the batch."""
    return {s["label"]: s["layout"]["note"] for s in data["snapshots"]
            if s["captured"] and s["expected_shape"][:1] == ["B"] and s["expected_shape"][1:2] == ["T"]}


@pytest.mark.parametrize("attention, T, B, rests_on", [
    pytest.param(HEADS_SPLIT, 6, 2, "read jointly from every captured step", id="heads split, B != T"),
    pytest.param(MODULE, 6, 2, "G12 read as captured only sequence-first", id="nn.MultiheadAttention, B != T"),
    pytest.param(MODULE, 4, 4, "the modules your marked lines called say so (MultiheadAttention: batch_first=False",
                 id="nn.MultiheadAttention, B = T"),
])
def test_a_sequence_first_script_is_read_sequence_first_at_every_step_and_passes(tmp_path, attention, T, B, rests_on):
    data = traced(tmp_path, attention, T, B)
    counts = data["outcome"]["counts"]
    assert counts["failed"] == counts["unrecognised"] == 0 and counts["passed"] >= 10, counts
    assert data["dims"]["B"] == B and data["dims"]["T"] == T
    row = layout_row(data)
    assert row["variant"].startswith("sequence-first") and rests_on in row["rests_on"], row
    notes = turned_steps(data)
    assert {"G01", "G02", "G06", "G18", "G25", "G27"} <= set(notes)
    assert all(note.startswith("sequence-first (T, B") for note in notes.values()), notes


def test_heads_folded_into_the_batch_axis_are_read_with_the_runs_batch_and_heads(tmp_path):
    data = traced(tmp_path, HEADS_FOLDED, 6, 2)
    counts = data["outcome"]["counts"]
    assert counts["failed"] == counts["unrecognised"] == 0 and counts["passed"] >= 15, counts
    assert layout_row(data)["variant"].startswith("sequence-first")
    heads = next(v for v in data["outcome"]["recognised"]["variants"] if v["what"] == "Heads")
    assert heads["variant"].startswith("folded into the batch axis (B·h, …)")
    assert all(label in heads["rests_on"] for label in ("G08", "G11", "G12", "G14"))
    checks = {s["label"]: s["check"] for s in data["snapshots"] if s["captured"]}
    assert all(checks[label]["passed"] is True for label in ("G08", "G11", "G12", "G13", "G14", "G15", "G16"))


def test_steps_that_contradict_each_other_are_named_on_the_overview_in_one_line(tmp_path):
    # one step marked on a batch-first copy of the sequence-first stream: it reads as captured only batch-first
    data = traced(tmp_path, HEADS_SPLIT, 6, 2, ("        x = x + attn_out  # BREAKPOINT G18\n",
                                              "        x = x + attn_out\n        copy = x.transpose(0, 1)  "
                                              "# BREAKPOINT G18\n"))
    warnings = [w for w in data["outcome"]["warnings"] if w.startswith("The steps contradict each other")]
    assert len(warnings) == 1 and "\n" not in warnings[0], data["outcome"]["warnings"]
    assert "only batch-first (B, T, …)" in warnings[0] and "G18 only batch-first" in warnings[0]
    assert "G01, G02" in warnings[0] and "every step is read sequence-first" in warnings[0]
    assert layout_row(data)["variant"].startswith("sequence-first")


LEGEND = Legend({"B": "batch", "T": "positions", "C": "width", "h": "heads", "hs": "head size"},
                relations=(Quotient("hs", "C", "h"),))


def test_the_run_layout_of_shapes_alone_batch_first_where_nothing_tells_otherwise():
    steps = [StepShape("G02", ("B", "T", "C"), (2, 6, 32)), StepShape("G08", ("B", "h", "T", "hs"), (2, 4, 6, 8)),
             StepShape("G12", ("1", "1", "T", "T"), (1, 1, 6, 6))]
    run = read_run_layout(steps, LEGEND)
    assert not run.sequence_first and run.dims["B"] == 2 and run.dims["T"] == 6 and not run.contradiction
    turned = [StepShape(s.step, s.named, (6, 2, 32) if s.step == "G02" else s.shape) for s in steps]
    run = read_run_layout(turned, LEGEND)
    assert run.sequence_first and run.dims["B"] == 2 and run.dims["T"] == 6, run
    square = [StepShape("G02", ("B", "T", "C"), (4, 4, 32)), StepShape("G08", ("B", "h", "T", "hs"), (4, 4, 4, 8))]
    run = read_run_layout(square, LEGEND)  # B = T and no module says: the catalogue's batch-first, and said so
    assert not run.sequence_first and "B = T" in run.rests_on and "no module says" in run.rests_on
    x = torch.randn(4, 4, 32)
    assert read_run_layout([StepShape("G02", ("B", "T", "C"), (4, 4, 32), value=x)], LEGEND).sequence_first is False


VIT = Path(__file__).resolve().parent.parent / "examples" / "vit_trace.py"
CLASS_FIRST_CONCAT = "x_tokens = torch.cat([cls_tok, x_embed], dim=1)"
POOLED_ROW_0 = "cls_rep = final_seq[:, 0, :]"
CLASS_JOINS = '''    x_tokens = torch.cat([cls_tok, x_embed], dim=1)  # (B, 1 + N, D)
    # BREAKPOINT S06 - Embeddings AFTER adding the class token
    x_pos = x_tokens + pos_embed
    # BREAKPOINT S07 - Embeddings AFTER adding positional encoding
'''
CLASS_STEP = '''    cls_tok = cls_token.expand(B, -1, -1)  # (B, 1, D)
    # BREAKPOINT S05 - Class token BEFORE concatenation
'''


@pytest.mark.parametrize("changes, place, rests_on", [
    pytest.param(((CLASS_FIRST_CONCAT, "x_tokens = torch.cat([x_embed, cls_tok], dim=1)"),
                  (POOLED_ROW_0, "cls_rep = final_seq[:, -1, :]")),
                 "last, after the patches", "S06's last row is S05, the class token", id="class token last"),
    pytest.param(((CLASS_STEP + CLASS_JOINS, "    x_pos = x_embed + pos_embed[:, 1:]\n"),
                  (POOLED_ROW_0, "cls_rep = final_seq.mean(dim=1)")),
                 "none", "hold 64 tokens, the patches alone", id="no class token, mean pooling"),
    pytest.param(((CLASS_JOINS, "    x_pos = x_embed + pos_embed[:, 1:]\n"
                                "    # BREAKPOINT S07 - Embeddings AFTER adding positional encoding\n"
                                "    x_tokens = torch.cat([cls_tok, x_pos], dim=1)  # (B, 1 + N, D)\n"
                                "    # BREAKPOINT S06 - Embeddings AFTER adding the class token\n"
                                "    x_pos = x_tokens\n"),),
                 "first, before the patches", "it joins after the positions: S07 holds the 64 patches alone",
                 id="class token joined after the positions"),
])
def test_where_the_class_token_is_is_read_once_for_the_run_and_every_step_reads_it_so(tmp_path, changes, place,
                                                                                       rests_on):
    text = VIT.read_text(encoding="utf-8")
    for old, new in changes:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    script = tmp_path / "vit.py"
    script.write_text(text, encoding="utf-8")
    code = main(["trace", str(script), "--out", str(tmp_path / "out"), "--name", "t", "-q"])
    data = json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))
    found = next(v for v in data["outcome"]["recognised"]["variants"] if v["what"] == "Class token")
    assert found["variant"].startswith(place) and rests_on in found["rests_on"], found
    checks = {s["label"]: s for s in data["snapshots"] if s["captured"]}
    if place.startswith("last"):  # every step of the tokens read with the class token first: all pass, S24 too
        assert code == 0 and data["outcome"]["counts"]["failed"] == data["outcome"]["counts"]["unrecognised"] == 0
        assert all(checks[label]["check"]["passed"] is True for label in ("S06", "S09", "S13", "S23", "S24"))
        assert all("the class token last, read first" in checks[label]["layout"]["note"]
                   for label in ("S06", "S08", "S09", "S12", "S13", "S23"))
    else:
        assert code == 0 and data["outcome"]["counts"]["failed"] == 0
    if "after the positions" in rests_on:  # S07 holds the patches alone: read with the class token's row in front
        assert data["outcome"]["counts"]["unrecognised"] == 0, data["outcome"]["counts"]
        # (a batch of one: the positions' table is a local, not captured, and one item cannot show the added term
        # depends on the position only, so S07 itself is not checkable here; tests/variants traces a batch of two)
        assert checks["S07"]["check"]["passed"] is None and "the patches alone" in checks["S07"]["layout"]["note"]
        assert checks["S06"]["check"]["passed"] is True and "added before the class token joined" in checks["S06"][
            "check"]["name"] and checks["S08"]["check"]["passed"] is True


def per_head_steps(scale: float, keys_from: str = "k", stored_transposed: bool = True) -> list[StepShape]:
    """q, k, v (B, h, T, hs) with T = hs = 8 and the scores q @ K × ``scale``; K (``keys_from`` the keys, or the values
    as a bug takes them) kept (B, h, hs, T) for the product where ``stored_transposed``, as GPT-2's split_heads does."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 8, 8) for _ in range(3))
    keys = {"k": k, "v": v}[keys_from]
    stored = keys.transpose(-2, -1) if stored_transposed else keys
    named = ("B", "h", "T", "hs")
    return [StepShape("G08", named, (2, 4, 8, 8), value=q), StepShape("G09", named, (2, 4, 8, 8), value=stored),
            StepShape("G10", named, (2, 4, 8, 8), value=v),
            StepShape("G11", ("B", "h", "T", "T"), (2, 4, 8, 8), value=q @ keys.transpose(-2, -1) * scale)]


@pytest.mark.parametrize("scale, keys_from", [pytest.param(8 ** -0.5, "k", id="scaled by 1/√hs"),
                                              pytest.param(1.0, "k", id="1/√d left out"),
                                              pytest.param(8 ** -0.5, "v", id="K taken from the values")])
def test_keys_stored_transposed_where_t_equals_hs_are_read_so_from_the_scores_numbers(scale, keys_from):
    run = read_run_layout(per_head_steps(scale, keys_from), LEGEND)
    assert [(t.step, t.named) for t in run.transposed] == [("G09", ("B", "h", "T", "hs"))]
    assert "G11 is a constant times G08 · G09 as captured, not G08 · G09ᵀ" in run.transposed[0].because
    assert any(what == "Keys (G09)" and variant.startswith("stored transposed") for what, variant, _ in run.recognised())
    assert run.stored_transposed("G09", ("B", "h", "T", "hs"), torch.empty(2, 4, 8, 8))
    assert not run.stored_transposed("G08", ("B", "h", "T", "hs"), torch.empty(2, 4, 8, 8))


def test_keys_in_the_catalogues_orientation_or_without_scores_are_read_as_captured():
    assert read_run_layout(per_head_steps(8 ** -0.5, stored_transposed=False), LEGEND).transposed == ()
    no_scores = [s for s in per_head_steps(8 ** -0.5) if s.step != "G11"]  # nothing tells: as captured
    assert read_run_layout(no_scores, LEGEND).transposed == ()


VIT_LEGEND = Legend({"B": "batch", "N": "patches", "N1": "tokens", "C": "width"})


def vit_steps(extra: int = 0, joins_after: bool = False) -> list[StepShape]:
    """S04 patches (2, 9, 8), S05 the class token, S06 the tokens (class token, ``extra`` learned tokens, patches),
    S07 the tokens plus positions, or (``joins_after``) the patches plus positions with S06 joining the class token
    to them."""
    torch.manual_seed(0)
    patches, cls, pos = torch.randn(2, 9, 8), torch.randn(1, 1, 8).expand(2, 1, 8), torch.randn(1, 9, 8)
    learned = torch.randn(1, extra, 8).expand(2, extra, 8)
    with_positions = patches + pos
    tokens = torch.cat([cls, learned, with_positions if joins_after else patches], dim=1)
    after = with_positions if joins_after else tokens + torch.randn(1, tokens.shape[1], 8)
    return [StepShape("S04", ("B", "N", "C"), tuple(patches.shape), value=patches),
            StepShape("S05", ("B", "1", "C"), tuple(cls.shape), value=cls),
            StepShape("S06", ("B", "N1", "C"), tuple(tokens.shape), value=tokens),
            StepShape("S07", ("B", "N1", "C"), tuple(after.shape), value=after)]


@pytest.mark.parametrize("extra", [1, 4])
def test_extra_tokens_besides_the_class_token_are_read_once_for_the_run_and_said(extra):
    run = read_run_layout(vit_steps(extra), VIT_LEGEND)
    assert run.class_token == "first" and run.dims["N1"] == 10 + extra and run.dims["N"] == 9
    rows = {what: variant for what, variant, _ in run.recognised()}
    assert rows["Extra tokens"].startswith(f"{extra} besides the class token (distillation or register tokens)")
    assert "Extra tokens" not in {what for what, _, _ in read_run_layout(vit_steps(0), VIT_LEGEND).recognised()}


def test_a_class_token_joined_after_the_positions_reads_the_patches_alone_with_its_row_in_front():
    steps = vit_steps(joins_after=True)
    run = read_run_layout(steps, VIT_LEGEND)
    assert run.class_token == "first" and run.patches_alone == ("S07",), run
    s06, s07 = steps[2].value, steps[3].value
    assert s06 is not None and s07 is not None
    read = run.with_joining_row("S07", ("B", "N1", "C"), s07)
    assert read is not None and torch.equal(read, s06)  # the tokens whole: what the blocks are handed
    assert run.with_joining_row("S06", ("B", "N1", "C"), s07) is None  # only the step that holds the patches alone
    assert read_run_layout(vit_steps(), VIT_LEGEND).patches_alone == ()
