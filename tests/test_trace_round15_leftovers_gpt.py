"""The forms round fourteen's GPT-style and encoder–decoder implementations left unread (tests/trace_fresh/ROUND14_GPT.md,
"What is left"), built here in scripts of our own, none from the upstream code:

- DynamicTanh in a LayerNorm's place (``gamma * tanh(alpha * x) + beta``, a learned scalar alpha): read as a
  normalisation family with the module's own parameters (AwikDhar/GPT's G25), alpha fitted from the tensors where no
  weights are captured, and its alpha left out named (AwikDhar's B2)."""

from __future__ import annotations

import torch

from tests.conftest import trace_source as traced
from transformer_trace.checks.normalisation import fitted_layer_norm

DYNAMIC_TANH = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class DynamicTanh(nn.Module):
    def __init__(self, width, init_alpha=0.5):
        super().__init__()
        self.gamma = nn.Parameter(1 + 0.1 * torch.randn(width))
        self.beta = nn.Parameter(0.1 * torch.randn(width))
        self.alpha = nn.Parameter(torch.ones(1) * init_alpha)

    def forward(self, x):
        return self.gamma * TANH + self.beta


V, C = 40, 16
tok_emb = nn.Embedding(V, C)
final_norm = DynamicTanh(C)
lm_head = nn.Linear(C, V)
ids = torch.tensor([[1, 5, 7, 2, 9, 3], [4, 4, 8, 0, 6, 1]])
with torch.no_grad():
    tok = tok_emb(ids)  # BREAKPOINT G02
    x = tok * 2
    x = final_norm(x)  # BREAKPOINT G25
    logits = lm_head(x)  # BREAKPOINT G26
'''


def test_a_dynamic_tanh_in_the_final_norms_place_passes_with_its_own_parameters(tmp_path):
    """AwikDhar/GPT's G25 (round fourteen): not checkable before (a user's module of three parameters)."""
    code, checks = traced(tmp_path, DYNAMIC_TANH.replace("TANH", "F.tanh(self.alpha * x)"))
    assert code == 0, checks[""]
    assert checks["G25"]["passed"] is True, checks["G25"]["detail"]
    assert checks["G25"]["name"].startswith("equals DynamicTanh("), checks["G25"]["name"]
    assert "alpha = 0.5" in checks["G25"]["detail"]


def test_a_dynamic_tanh_without_its_alpha_is_named(tmp_path):
    """AwikDhar/GPT's B2 (round fourteen): ``tanh(x)``, the learned alpha left out."""
    code, checks = traced(tmp_path, DYNAMIC_TANH.replace("TANH", "F.tanh(x)"))
    assert code == 1
    assert checks[""]["first_failure"].startswith("G25"), checks[""]["first_failure"]
    assert checks["G25"]["evidence"]["name"] == "DynamicTanh without its alpha"


def test_a_dynamic_tanh_of_another_scale_is_not_passed(tmp_path):
    """Neither the family with the module's alpha nor alpha left out: a form the checks do not know, never passed."""
    _, checks = traced(tmp_path, DYNAMIC_TANH.replace("TANH", "F.tanh(3 * self.alpha * x)"))
    assert checks["G25"]["passed"] is not True, checks["G25"]["detail"]


def _stream() -> torch.Tensor:
    return torch.randn(2, 6, 16, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 2


def test_a_dynamic_tanh_without_weights_is_read_with_its_alpha_fitted():
    x = _stream()
    gain = 1 + 0.1 * torch.arange(16, dtype=torch.float64)
    claim, passed, detail = fitted_layer_norm(gain * torch.tanh(0.7 * x) - 0.2, x, "its input")
    assert passed, detail
    assert claim.startswith("equals DynamicTanh("), claim
    assert "alpha fitted (0.7" in detail, detail


def test_the_input_itself_is_not_read_as_a_dynamic_tanh_of_a_small_alpha():
    """A tiny alpha makes tanh a line: a norm left out (the step equal to its input) fits it, so it proves nothing."""
    x = _stream()
    _, passed, _ = fitted_layer_norm(x.clone(), x, "its input")
    assert not passed
