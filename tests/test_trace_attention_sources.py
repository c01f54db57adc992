"""What an attention module was given (issue 40: DETR's B2 and B5, T5's B5): a cross-attention's keys and values
computed from another captured tensor than the encoder's output, and a query or key given the positions twice, are
named from the calls the marked lines (or the unmarked statements they were traced back to) made: the K projection
and ``nn.MultiheadAttention`` compute correctly from whatever they were given, so no step's own check sees either.
The correct forms stay green: DETR's ``q = k = src + pos``, ``value=src`` and ``key=memory + pos``, ``value=memory``
(sequence-first and batch-first), and T5's K/V projected from a LayerNorm of the encoder's last output. Tiny scripts
of our own, no upstream file."""

from __future__ import annotations

import re
import textwrap
from types import SimpleNamespace

import pytest
import torch

from tests.conftest import trace_source as traced
from transformer_trace.models.encoder_decoder import DecoderLayer, EncoderLayer, MultiHeadAttention
from transformer_trace.models.recording import Role
from transformer_trace.places import Place
from transformer_trace.reports.encoder_decoder.catalogue import SNAPSHOTS
from transformer_trace.sources import Ref
from transformer_trace.trace.child.protocol import FED_AT, ModuleKind
from transformer_trace.trace.reading.attention_sources import _encoder_output, _projection_pages
from transformer_trace.trace.reading.capture import ModuleCall
from transformer_trace.trace.reading.feeders import as_read, traced_back

# DETR's layer forms: post-norm sums on unmarked lines, the attention modules called on unmarked statements, the
# positions added to the queries and keys of every attention, not to the values
DETR_LIKE = """\
import torch
import torch.nn as nn


class EncoderLayer(nn.Module):
    def __init__(self, C=16):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(C, 2, batch_first=BATCH_FIRST)
        self.linear1, self.linear2 = nn.Linear(C, 32), nn.Linear(32, C)
        self.norm1, self.norm2 = nn.LayerNorm(C), nn.LayerNorm(C)

    def forward(self, src, pos):  # Snapshot #6 src
        q = k = src + pos
        src2 = self.self_attn(q, k, value=src)[0]
        src = src + src2
        src = self.norm1(src)  # Snapshot #15
        src2 = self.linear2(torch.relu(self.linear1(src)))  # Snapshot #18
        src = src + src2
        src = self.norm2(src)  # Snapshot #19
        return src


class DecoderLayer(nn.Module):
    def __init__(self, C=16):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(C, 2, batch_first=BATCH_FIRST)
        self.cross_attn = nn.MultiheadAttention(C, 2, batch_first=BATCH_FIRST)
        self.linear1, self.linear2 = nn.Linear(C, 32), nn.Linear(32, C)
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(C), nn.LayerNorm(C), nn.LayerNorm(C)

    def forward(self, tgt, memory, pos, query_pos):  # Snapshot #20 tgt
        q = k = tgt + query_pos
        tgt2 = self.self_attn(q, k, value=tgt)[0]
        tgt = tgt + tgt2
        tgt = self.norm1(tgt)  # Snapshot #29
        tgt2 = self.cross_attn(query=tgt + query_pos, key=memory + pos, value=memory)[0]
        tgt = tgt + tgt2
        tgt = self.norm2(tgt)  # Snapshot #36
        tgt2 = self.linear2(torch.relu(self.linear1(tgt)))  # Snapshot #39
        tgt = tgt + tgt2
        tgt = self.norm3(tgt)  # Snapshot #40
        return tgt


torch.manual_seed(0)
encoder, decoder = [EncoderLayer().eval() for _ in range(2)], [DecoderLayer().eval() for _ in range(2)]
src = torch.randn(SOURCE)  # Snapshot #4
pos, query_pos = torch.randn(ENC_POS), torch.randn(DEC_POS)
with torch.no_grad():
    memory = src
    for layer in encoder:
        memory = layer(memory, pos)
    tgt = torch.zeros(TARGET)
    for layer in decoder:
        tgt = layer(tgt, memory, pos, query_pos)
"""
LAYOUTS = {"sequence-first": {"BATCH_FIRST": "False", "SOURCE": "6, 2, 16", "ENC_POS": "6, 1, 16",
                              "DEC_POS": "3, 1, 16", "TARGET": "3, 2, 16"},
           "batch-first": {"BATCH_FIRST": "True", "SOURCE": "2, 6, 16", "ENC_POS": "1, 6, 16",
                           "DEC_POS": "1, 3, 16", "TARGET": "2, 3, 16"}}
MEMORY_FROM_THE_ENCODERS_INPUT = {"tgt = layer(tgt, memory, pos, query_pos)": "tgt = layer(tgt, src, pos, query_pos)"}
POSITIONS_TWICE = {"q = k = src + pos\n": "q = k = src + pos + pos\n"}

# T5's cross-attention: q, k and v projected on one marked line, the keys and values from the encoder's output (a
# final LayerNorm no line marks), the encoder's length 8 and the decoder's 7
T5_LIKE = """\
import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, C=16, heads=2):
        super().__init__()
        self.heads = heads
        self.to_q, self.to_k, self.to_v = (nn.Linear(C, C, bias=False) for _ in range(3))
        self.to_out = nn.Linear(C, C)

    def forward(self, x, context):
        b, n, c = x.shape
        q, k, v = self.to_q(x), self.to_k(context), self.to_v(context)  # Snapshot #30, #31, #32
        q, k, v = (t.view(b, -1, self.heads, c // self.heads).transpose(1, 2) for t in (q, k, v))
        attn = (q @ k.transpose(-2, -1) / (c // self.heads) ** 0.5).softmax(-1)
        return self.to_out((attn @ v).transpose(1, 2).reshape(b, n, c))


class EncoderLayer(nn.Module):
    def __init__(self, C=16):
        super().__init__()
        self.norm, self.ff = nn.LayerNorm(C), nn.Sequential(nn.Linear(C, 32), nn.ReLU(), nn.Linear(32, C))

    def forward(self, x):
        out = x + self.ff(self.norm(x))  # Snapshot #19
        return out


class DecoderLayer(nn.Module):
    def __init__(self, C=16):
        super().__init__()
        self.norm, self.cross_attn = nn.LayerNorm(C), CrossAttention(C)

    def forward(self, x, context):
        return x + self.cross_attn(self.norm(x), context)


torch.manual_seed(0)
encoder, decoder = [EncoderLayer().eval() for _ in range(2)], [DecoderLayer().eval() for _ in range(2)]
final_norm = nn.LayerNorm(16)
src, tgt = torch.randn(2, 8, 16), torch.randn(2, 7, 16)
with torch.no_grad():
    memory = src
    for layer in encoder:
        memory = layer(memory)
    memory = final_norm(memory)
    for layer in decoder:
        tgt = layer(tgt, memory)
"""
KV_FROM_THE_DECODER = {"self.to_k(context), self.to_v(context)": "self.to_k(x), self.to_v(x)"}


def _script(text: str, placed: dict[str, str], replaced: dict[str, str] | None = None) -> str:
    for name, value in placed.items():
        text = re.sub(rf"\b{name}\b", value, text)
    for old, new in (replaced or {}).items():
        assert old in text
        text = text.replace(old, new)
    return text


CORRECT = {**{f"DETR {layout}": (_script(DETR_LIKE, placed), ("#15", "#36")) for layout, placed in LAYOUTS.items()},
           "T5": (T5_LIKE, ("#31", "#32"))}
# what was planted -> (the script, the step that fails first, the bug form named, what its message says)
BUGS = {
    **{f"DETR {layout}: the decoder given the encoder's input as memory": (
        _script(DETR_LIKE, placed, MEMORY_FROM_THE_ENCODERS_INPUT), "#36", "K or V from another input",
        ("was given your src (#4) as its value",)) for layout, placed in LAYOUTS.items()},
    **{f"DETR {layout}: the encoder's query and key given the positions twice": (
        _script(DETR_LIKE, placed, POSITIONS_TWICE), "#15", "positions added twice", ("plus twice the term", "#36"))
       for layout, placed in LAYOUTS.items()},
    "T5: keys and values projected from the decoder stream": (
        _script(T5_LIKE, {}, KV_FROM_THE_DECODER), "#31", "K or V from another input",
        ("given the query's input (the decoder stream)", "is not the encoder output's (2, 8, 16)")),
}


@pytest.mark.parametrize("script, steps", CORRECT.values(), ids=CORRECT)
def test_attention_inputs_as_they_should_be_pass(tmp_path, script, steps):
    code, checks = traced(tmp_path, script)
    assert code == 0, checks[""]
    assert all(checks[step]["passed"] is True for step in steps), [checks[step] for step in steps]


@pytest.mark.parametrize("script, first, form, said", BUGS.values(), ids=BUGS)
def test_an_attention_given_the_wrong_input_fails_with_the_bug_form_at_the_line_that_shows_it(tmp_path, script, first,
                                                                                               form, said):
    code, checks = traced(tmp_path, script)
    assert code == 1, checks[""]
    assert checks[""]["first_failure"].startswith(first), checks[""]
    evidence = checks[first]["evidence"]
    assert evidence["name"] == form, checks[first]
    assert all(text in evidence["message"] for text in said), evidence


def _reading(ref: Ref, value: torch.Tensor) -> SimpleNamespace:
    """A captured step showing ``ref`` whose one hit held ``value`` (what the readers below look at)."""
    return SimpleNamespace(captured=True, snap=SimpleNamespace(main=ref, number=0), hit_values=((value,),),
                           run=SimpleNamespace(as_called=lambda tensor: tensor))


def test_the_cross_attention_s_steps_and_the_encoder_s_output_are_found_by_their_declared_roles_not_their_names():
    cross = Place("{dec}.attention2", MultiHeadAttention, Role.CROSS_ATTENTION)  # no name says cross
    named_cross = Place("{dec}.cross_attn", MultiHeadAttention)  # its name says cross; declared a self-attention
    keys, misnamed_keys, values = (_reading(ref, torch.zeros(1)) for ref in (cross.K, named_cross.K, cross.V))
    assert _projection_pages([keys, misnamed_keys, values], Role.KEYS) == [keys]
    assert _projection_pages([keys, misnamed_keys, values], Role.VALUES) == [values]
    encoder_output, decoder_output = torch.ones(2), torch.zeros(2)
    steps = [_reading(Place("{dec}", DecoderLayer).OUTPUT, decoder_output),
             _reading(Place("{layer}", EncoderLayer, Role.ENCODER).OUTPUT, encoder_output)]
    found = _encoder_output(steps)
    assert found is not None and found[0] is steps[1] and found[1] is encoder_output


def test_the_encoder_decoder_catalogue_declares_the_steps_the_cross_attention_reading_needs():
    declared = {role: [s.number for s in SNAPSHOTS if roles <= s.main.roles] for role, roles in (
        ("queries", {Role.CROSS_ATTENTION, Role.QUERIES}), ("keys", {Role.CROSS_ATTENTION, Role.KEYS}),
        ("values", {Role.CROSS_ATTENTION, Role.VALUES}), ("encoder output", {Role.ENCODER, Role.LAYER_OUTPUT}))}
    assert declared == {"queries": [30], "keys": [31], "values": [32], "encoder output": [19]}


def test_the_attention_call_of_a_statement_traced_back_to_is_kept_whatever_the_line_made_of_its_output():
    start, end = DETR_LIKE.index("    def forward(self, src"), DETR_LIKE.index("        src2 = self.linear2")
    forward = textwrap.dedent(DETR_LIKE[start:end])
    lines = forward.splitlines()
    marked = next(i for i, line in enumerate(lines, 1) if "# Snapshot #15" in line)
    attention = next(i for i, line in enumerate(lines, 1) if "self.self_attn(" in line)
    assert attention in traced_back(forward, marked, marked)  # ``src2 = self.self_attn(...)[0]``, then the sum
    query, value, output = torch.randn(6, 2, 16), torch.randn(6, 2, 16), torch.randn(6, 2, 16)
    attention_call = ModuleCall("MultiheadAttention", ModuleKind.MULTIHEAD_ATTENTION, 1, [query, query, value],
                                [output], {}, {FED_AT: attention})
    summed = ModuleCall("src", ModuleKind.LOCAL, 0, [], [value + output], {}, {})  # the line read the sum
    assert as_read((attention_call, summed), frozenset({attention})) == (attention_call, summed)
    assert as_read((attention_call, summed), frozenset()) == (summed,)  # a feeder's, its output not read: left out
