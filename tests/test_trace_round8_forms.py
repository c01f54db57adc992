"""Correct code in the forms round eight's fresh GPT-style and encoder–decoder implementations brought
(tests/trace_fresh/ROUND8_GPT.md), each built here on its own, none from the upstream code: scores plus T5's learned
relative position bias (conceptofmind/t5-pytorch), a gated MLP's hidden layer marked where its two factors are
multiplied (Gemma's GeGLU, google/gemma_pytorch), one residual wrapper's line shared by an encoder–decoder's five
residual sums (`Residual(fn)`: `return self.fn(x) + x  # Snapshot #14 or #19 or #29 or #36 or #40`), and one line
carrying several shared markers (`q, k, v = ...  # Snapshot #7 or #21, #8 or #22, #9 or #23`). Each passes and says
so; the bugs that look like them (1/√d missing without a position bias, a gate that is no activation of fc1, a
residual dropped in the shared wrapper) are still named. Since round eleven, Q·Kᵀ unscaled plus a relative position bias
is T5's own attention (T5 leaves out the 1/√hs by design), which passes."""

from __future__ import annotations

import math

import pytest
import torch

from tests.conftest import trace_source as traced
from transformer_trace.checks.attention import ScaledScores
from transformer_trace.checks.gated import GatedOfLinear
from transformer_trace.checks.layers import GATES
from transformer_trace.reports import REPORTS
from transformer_trace.sources import ModuleRef, Ref, TensorDict
from transformer_trace.trace import numberings
from transformer_trace.trace.markers import find_markers
from transformer_trace.trace.reading.capture import Hit
from transformer_trace.trace.reading.shared_lines import by_stage_and_sublayer, residual_use

B, H, T, HS = 2, 3, 6, 4


def _scores(scale: float, per_item: bool = False) -> TensorDict:
    """Q·Kᵀ × ``scale`` plus a relative bias: one learned value per head and key − query offset (T5's buckets read
    as a table), the same for every batch item unless ``per_item`` (then no position bias)."""
    torch.manual_seed(0)
    q, k = torch.randn(B, H, T, HS), torch.randn(B, H, T, HS)
    offsets = torch.arange(T)[None, :] - torch.arange(T)[:, None] + T - 1
    bias = torch.randn(H, 2 * T - 1)[:, offsets]  # (h, T, T)
    bias = bias + torch.randn(B, 1, 1, 1) if per_item else bias
    return TensorDict({"scores": q @ k.transpose(-2, -1) * scale + bias, "q": q, "k": k})


SCORES = ScaledScores(out=Ref("scores"), q=Ref("q"), k=Ref("k"))


def test_scores_plus_a_relative_position_bias_pass_and_say_the_bias():
    result = SCORES.run(_scores(1 / math.sqrt(HS)))
    assert result.status == "passed", result.detail
    assert "plus a relative position bias" in result.name


def test_scores_without_the_scale_beside_a_relative_position_bias_pass_as_t5s_attention():
    # T5 (Mesh TensorFlow's, HF's) leaves out the 1/√hs by design: a correct form known, not 1/√d missing (round eleven)
    result = SCORES.run(_scores(1.0))
    assert result.status == "passed", result.detail
    assert "T5's attention" in result.name


def test_scores_without_the_scale_and_without_a_position_bias_are_named_1_over_sqrt_d_missing():
    torch.manual_seed(0)
    q, k = torch.randn(B, H, T, HS), torch.randn(B, H, T, HS)
    result = SCORES.run(TensorDict({"scores": q @ k.transpose(-2, -1), "q": q, "k": k}))
    assert result.status == "failed" and result.evidence is not None
    assert result.evidence.name == "1/√d missing", result.detail


def test_a_term_that_differs_between_batch_items_is_no_position_bias():
    assert SCORES.run(_scores(1 / math.sqrt(HS), per_item=True)).status != "passed"


@pytest.mark.parametrize(("comment", "expected"), [
    ("# Snapshot #7 or #21, #8 or #22, #9 or #23", [(7, (7, 21), "q"), (8, (8, 22), "k"), (9, (9, 23), "v")]),
    ("# Snapshot #7 or #21 or #30", [(7, (7, 21, 30), "q, k, v")]),
])
def test_a_line_may_carry_several_shared_markers_each_reading_its_own_name(tmp_path, comment, expected):
    script = tmp_path / "attention.py"
    script.write_text(f"import torch\nx = torch.ones(2)\nq, k, v = x, x + 1, x + 2  {comment}\n", encoding="utf-8")
    found = [(m.number, m.alternatives, ", ".join(m.names)) for m in find_markers(script, numberings(REPORTS))]
    assert found == expected


def _hit(order: int, path: str, holds: str) -> Hit:
    """A hit of the shared residual line, run by the wrapper at ``path`` ("decoder.layer.0.1") holding ``holds``."""
    attributes = path.split(".")
    modules = [["", "T5", None, False, None]] + [[a, "Module", None, False, None] for a in attributes[:-1]]
    return Hit(order, [], ("model.py", 40), modules + [[attributes[-1], "Residual", "one", False, holds]])


def test_an_encoder_decoders_residual_sums_on_one_wrapper_line_are_told_by_stage_and_sublayer():
    snaps = {s.number: s for s in REPORTS["encoder-decoder"].snapshots}
    residuals = {n: residual_use(snaps[n]) for n in (14, 19, 29, 36, 40)}
    hits = [_hit(0, "encoder.layer.0.0", "attention"), _hit(1, "encoder.layer.0.1", "mlp"),
            _hit(2, "encoder.layer.1.0", "attention"), _hit(3, "encoder.layer.1.1", "mlp"),
            _hit(4, "decoder.layer.0.0", "attention"), _hit(5, "decoder.layer.0.1", "attention"),
            _hit(6, "decoder.layer.0.2", "mlp")]
    found = by_stage_and_sublayer(residuals, hits)  # type: ignore[arg-type]
    assert not found.untold
    assert {n: [hit.order for hit, _ in group] for n, group in found.groups.items()} == \
        {14: [0, 2], 19: [1, 3], 29: [4], 36: [5], 40: [6]}


GEGLU_GPT = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
B, T, C, M = 2, 5, 16, 32


class GatedMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(C)
        self.gate_proj, self.up_proj = nn.Linear(C, M, bias=False), nn.Linear(C, M, bias=False)
        self.down_proj = nn.Linear(M, C, bias=False)

    def forward(self, x):
        h = self.norm(x)  # BREAKPOINT G19
        gate = self.gate_proj(h)  # BREAKPOINT G20
        gate = F.gelu(gate, approximate="tanh")
        up = self.up_proj(h)
        fuse = gate * up  # BREAKPOINT G21
        return self.down_proj(fuse)  # BREAKPOINT G22


with torch.no_grad():
    GatedMLP().eval()(torch.randn(B, T, C))
'''


def test_a_gated_mlps_hidden_layer_is_read_as_the_product_of_the_factors_its_line_multiplied(tmp_path):
    # its values go below GELU's minimum (−0.17): before, that property made it red
    code, checks = traced(tmp_path, GEGLU_GPT)
    hidden = checks["G21"]
    assert code == 0 and hidden["passed"] is True, hidden["detail"]
    assert "GELU (tanh)(fc1(input)) × the up projection" in hidden["name"]  # checks/layers.py's family's name


def test_a_gate_that_is_no_activation_of_fc1_is_not_read_as_a_gated_mlp():
    torch.manual_seed(0)
    x, weight, up = torch.randn(B, T, 8), torch.randn(16, 8), torch.randn(B, T, 16)
    fc1 = torch.nn.Linear(8, 16, bias=False)
    fc1.weight.data = weight
    wrong_gate = torch.nn.functional.gelu(x @ weight.T * 2)
    source = TensorDict({"out": wrong_gate * up, "x": x, "gate": wrong_gate, "up": up}, modules={"fc1": fc1})
    check = GatedOfLinear(out=Ref("out"), x=Ref("x"), module=ModuleRef("fc1"), gate=Ref("gate"), up=Ref("up"))
    assert check.run(source).status != "passed"
    right = dict(source.tensors, gate=torch.nn.functional.silu(x @ weight.T))
    right["out"] = right["gate"] * up
    result = check.run(TensorDict(right, modules={"fc1": fc1}))
    assert result.status == "passed" and "SiLU(fc1(input))" in result.name


@pytest.mark.parametrize("activation", list(GATES))
def test_a_gate_of_any_member_of_the_one_activation_family_is_read_by_its_name(activation):
    # the gate is read with checks/layers.py's family (less its identity), as the feed-forward's activation is: the
    # first GLU's sigmoid and a tanh gate too, each said by the family's name
    torch.manual_seed(0)
    x, up = torch.randn(B, T, 8), torch.randn(B, T, 16)
    fc1 = torch.nn.Linear(8, 16, bias=False)
    gate = GATES[activation](fc1(x)).detach()
    source = TensorDict({"out": gate * up, "x": x, "gate": gate, "up": up}, modules={"fc1": fc1})
    check = GatedOfLinear(out=Ref("out"), x=Ref("x"), module=ModuleRef("fc1"), gate=Ref("gate"), up=Ref("up"))
    result = check.run(source)
    assert result.status == "passed" and f"{activation}(fc1(input))" in result.name, result.detail


PRE_NORM_WRAPPED_ENCODER = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, S, C, H = 2, 6, 16, 2


class Residual(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x) + x  # Snapshot #14 or #19


class PreNorm(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.norm, self.fn = nn.LayerNorm(C), fn

    def forward(self, x):
        return self.fn(self.norm(x))


class SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.to_q, self.to_k, self.to_v, self.to_out = (nn.Linear(C, C) for _ in range(4))

    def forward(self, x):
        q, k, v = self.to_q(x), self.to_k(x), self.to_v(x)  # Snapshot #7, #8, #9
        q, k, v = (t.view(B, S, H, C // H).transpose(1, 2) for t in (q, k, v))
        attn = (q @ k.transpose(-2, -1) / (C // H) ** 0.5).softmax(-1)
        return self.to_out((attn @ v).transpose(1, 2).reshape(B, S, C))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        mlp = lambda: nn.Sequential(nn.Linear(C, 4 * C), nn.ReLU(), nn.Linear(4 * C, C))  # noqa: E731
        self.layers = nn.ModuleList([nn.ModuleList([Residual(PreNorm(SelfAttention())), Residual(PreNorm(mlp()))])
                                     for _ in range(2)])

    def forward(self, x):
        for attn, ff in self.layers:
            x = attn(x)
            x = ff(x)
        return x


with torch.no_grad():
    Encoder().eval()(torch.randn(B, S, C))
'''


def test_a_pre_norm_encoders_residual_wrapper_shared_by_both_sums_gets_no_false_red(tmp_path):
    # before: every hit of the wrapper's line went to #14, its one value (the sum) filed as #14's first record, the
    # layer's input, and #7–#9 were red as "computed from" it
    code, checks = traced(tmp_path, PRE_NORM_WRAPPED_ENCODER)
    assert code == 0, {label: check["detail"] for label, check in checks.items() if label and check["passed"] is False}
    assert checks["#19"]["passed"] is True, checks["#19"]["detail"]
    told = " ".join(checks[""]["recognised"]["told_apart"])
    assert "#14 takes the encoder's self-attention residual sum" in told and "#19 takes the encoder's MLP" in told
