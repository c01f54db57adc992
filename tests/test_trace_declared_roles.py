"""The layout reader asks what a step is declared to be (models/recording.py ``Role``, carried by the catalogue's
references): only keys or values are read as fewer heads than the queries (grouped-query attention). Each catalogue's
tiny script of our own has grouped keys and values, read so and checked, and a step of another role narrower than the
catalogue names it (a LayerNorm's output sliced to half its channels), which fits no layout: a mismatch, shown and
left unrecognised, never "keys or values of fewer heads"."""

from __future__ import annotations

import importlib
import json

import pytest
import torch

from transformer_trace.cli import main
from transformer_trace.models.recording import Role
from transformer_trace.trace.reading.verify import LayoutStatus, layout

HEADER = '''\
import math
import torch
import torch.nn as nn

torch.manual_seed(0)
B, L, C, H, KV = 2, 6, 16, 4, 2
HS = C // H


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.wq, self.wk = nn.Linear(C, C), nn.Linear(C, KV * HS)
        self.wv, self.proj = nn.Linear(C, KV * HS), nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C)
'''

GPT = HEADER + '''
    def forward(self, x):  # BREAKPOINT G05
        q = self.wq(x).view(B, L, H, HS).transpose(1, 2)  # BREAKPOINT G08
        k = self.wk(x).view(B, L, KV, HS).transpose(1, 2)  # BREAKPOINT G09
        v = self.wv(x).view(B, L, KV, HS).transpose(1, 2)  # BREAKPOINT G10
        k, v = k.repeat_interleave(H // KV, dim=1), v.repeat_interleave(H // KV, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(HS)  # BREAKPOINT G11
        mask = torch.tril(torch.ones(L, L, dtype=torch.bool))  # BREAKPOINT G12
        scores = scores.masked_fill(~mask, float("-inf"))  # BREAKPOINT G13
        probs = scores.softmax(-1)  # BREAKPOINT G14
        ctx = probs @ v  # BREAKPOINT G15
        out = self.proj(ctx.transpose(1, 2).reshape(B, L, C))  # BREAKPOINT G17
        half = self.ln2(x + out)[..., : C // 2]  # BREAKPOINT G19
        return out


with torch.no_grad():
    Attention()(torch.randn(B, L, C))
'''

VIT = HEADER + '''
    def forward(self, x):  # BREAKPOINT S08
        q = self.wq(x).view(B, L, H, HS).transpose(1, 2)  # BREAKPOINT S09
        k = self.wk(x).view(B, L, KV, HS).transpose(1, 2)  # BREAKPOINT S10
        v = self.wv(x).view(B, L, KV, HS).transpose(1, 2)  # BREAKPOINT S11
        k, v = k.repeat_interleave(H // KV, dim=1), v.repeat_interleave(H // KV, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(HS)  # BREAKPOINT S12
        probs = scores.softmax(-1)  # BREAKPOINT S13
        ctx = probs @ v  # BREAKPOINT S14
        out = self.proj(ctx.transpose(1, 2).reshape(B, L, C))  # BREAKPOINT S15
        half = self.ln2(x + out)[..., : C // 2]  # BREAKPOINT S16
        return out


with torch.no_grad():
    Attention()(torch.randn(B, L, C))
'''

ENCODER_DECODER = HEADER + '''
    def forward(self, x):  # Snapshot #6
        q = self.wq(x)  # Snapshot #7
        k = self.wk(x)  # Snapshot #8
        v = self.wv(x)  # Snapshot #9
        qh = q.view(B, L, H, HS).transpose(1, 2)
        kh = k.view(B, L, KV, HS).transpose(1, 2).repeat_interleave(H // KV, dim=1)
        vh = v.view(B, L, KV, HS).transpose(1, 2).repeat_interleave(H // KV, dim=1)
        scores = qh @ kh.transpose(-2, -1) / math.sqrt(HS)  # Snapshot #10
        probs = scores.softmax(-1)  # Snapshot #11
        ctx = (probs @ vh).transpose(1, 2).reshape(B, L, C)  # Snapshot #13
        out = self.proj(ctx)  # Snapshot #14
        half = self.ln2(x + out)[..., : C // 2]  # Snapshot #15
        return out


with torch.no_grad():
    Attention()(torch.randn(B, L, C))
'''


def _traced(tmp_path, source: str) -> dict[str, dict]:
    script = tmp_path / "script.py"
    script.write_text(source, encoding="utf-8")
    main(["trace", str(script), "--out", str(tmp_path / "out"), "--name", "t", "-q"])
    data = json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))
    return {s["label"]: s for s in data["snapshots"] if s["captured"]}


@pytest.mark.parametrize(("source", "grouped", "checked", "narrower"), [
    (GPT, ("G09", "G10"), ("G09", "G10", "G11", "G14", "G15"), "G19"),
    (VIT, ("S10", "S11"), ("S10", "S11", "S12", "S13", "S14"), "S16"),
    (ENCODER_DECODER, ("#8", "#9"), ("#8", "#9", "#10", "#11", "#13"), "#15"),
], ids=["gpt", "vit", "encoder_decoder"])
def test_only_steps_declared_keys_or_values_are_read_as_fewer_heads_than_the_queries(tmp_path, source, grouped,
                                                                                      checked, narrower):
    steps = _traced(tmp_path, source)
    for label in grouped:
        assert steps[label]["layout"]["status"] == "layout", (label, steps[label]["layout"])
        assert "grouped-query attention: 2 key/value heads" in steps[label]["layout"]["note"]
    for label in checked:
        assert steps[label]["check"]["passed"] is True, (label, steps[label]["check"]["detail"])
    other = steps[narrower]
    assert other["layout"]["status"] == "mismatch", other["layout"]
    assert "grouped" not in other["layout"]["note"] and "axis 2 is 8, C = 16" in other["layout"]["note"]
    assert other["check"]["passed"] is None and other["check"]["status"] == "unrecognised", other["check"]


@pytest.mark.parametrize("report", ["gpt", "vit", "encoder_decoder", "toy_vit"])
def test_every_catalogue_declares_its_keys_and_values(report):
    snapshots = importlib.import_module(f"transformer_trace.reports.{report}.catalogue").SNAPSHOTS
    declared = {role for snap in snapshots for ref in snap.tensors for role in ref.roles}
    assert {Role.KEYS, Role.VALUES} <= declared


def test_a_fused_projection_of_fewer_key_value_heads_is_read_only_where_declared_queries_keys_and_values():
    fused = next(s for s in importlib.import_module("transformer_trace.reports.gpt.catalogue").SNAPSHOTS
                 if s.number == 7).main
    dims = {"B": 2, "T": 6, "C": 16, "h": 4, "hs": 4}
    qkv = torch.empty(2, 6, (4 + 2 * 2) * 4, device="meta")  # Gemma's qkv_proj: q of 4 heads, k and v of 2
    read = layout(qkv, ("B", "T", "3·C"), dims, {}, roles=fused.roles)
    assert read.status is LayoutStatus.LAYOUT and "2 key/value heads" in read.note
    assert layout(qkv, ("B", "T", "3·C"), dims, {}).status is LayoutStatus.MISMATCH
