"""Correct code in the forms round seventeen's fresh GPT-style implementations and encoder–decoder brought
(tests/trace_fresh/ROUND17_GPT.md), built here in scripts of our own, none from the upstream code:

- retention (RetNet's parallel form): ``(Q·Kᵀ ⊙ D)·V`` with D a causal decay matrix γ^(n−m), 0 above the diagonal,
  and no softmax: the decay mask multiplies the scores, a correct form, not "a position sees the next" (its zeros read
  as an additive mask's allowed entries) nor "the context computed from the scores where the probabilities belong"
  (Jamie-Stirling/RetNet: false reds at G12 and G15); its bug forms: the decay without its causal factor (the later
  keys seen), the decay reversed (older keys weighed more);
- scores too small for the checks' absolute tolerance (a model initialised at std 0.02): their scale is judged as a
  ratio, so another scale than 1/√hs is named there too (lpkphd/mosaic-gpt: MLA's scores scaled by 1/√8 instead of
  1/√(8 + 4) passed G11)."""

from __future__ import annotations

from tests.conftest import trace_source as traced

RETENTION = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C, h = 2, 6, 16, 2
hs = C // h
wq, wk, wv = nn.Linear(C, C, bias=False), nn.Linear(C, C, bias=False), nn.Linear(C, C, bias=False)
gamma = 0.9  # one decay for every head (RetNet gives each head module its own (T, T) D)
x = torch.randn(B, T, C)
with torch.no_grad():
    q = wq(x).view(B, T, h, hs).transpose(1, 2)  # BREAKPOINT G08
    k = wk(x).view(B, T, h, hs).transpose(1, 2)  # BREAKPOINT G09
    v = wv(x).view(B, T, h, hs).transpose(1, 2)  # BREAKPOINT G10
    n, m = torch.arange(T).unsqueeze(1), torch.arange(T).unsqueeze(0)
    decay = DECAY  # BREAKPOINT G12
    retained = (q @ k.transpose(-2, -1)) * decay  # BREAKPOINT G13
    context = retained @ v  # BREAKPOINT G15
'''


def test_retention_with_a_causal_decay_mask_and_no_softmax_is_a_correct_form(tmp_path):
    code, checks = traced(tmp_path, RETENTION.replace("DECAY", "(gamma ** (n - m)) * (n >= m).float()"))
    assert code == 0, checks[""]
    for label in ("G12", "G13", "G15"):
        assert checks[label]["passed"] is True, (label, checks[label]["detail"])
    assert "decay" in checks["G12"]["detail"]


def test_a_decay_mask_per_head_the_layout_cannot_read_gets_no_red_verdict(tmp_path):
    """(1, h, T, T): one decay per head in one tensor. The mask's layout is unread (unrecognised); the masked scores,
    read from their own masked entries, are zero exactly above the diagonal: no position sees the next."""
    per_head = "(torch.tensor([0.9, 0.7]).view(1, h, 1, 1) ** (n - m)) * (n >= m).float()"
    code, checks = traced(tmp_path, RETENTION.replace("DECAY", per_head))
    assert code == 0, checks[""]
    assert all(check["passed"] is not False for label, check in checks.items() if label), checks


def test_a_decay_mask_without_its_causal_factor_lets_a_query_see_later_keys(tmp_path):
    code, checks = traced(tmp_path, RETENTION.replace("DECAY", "gamma ** (n - m)"))
    assert code == 1
    assert checks["G12"]["passed"] is False
    assert checks["G12"]["evidence"]["name"] == "no query attends to a later key"


def test_a_decay_that_grows_going_back_is_named(tmp_path):
    code, checks = traced(tmp_path, RETENTION.replace("DECAY", "(gamma ** (m - n)) * (n >= m).float()"))
    assert code == 1
    assert checks["G12"]["passed"] is False
    assert checks["G12"]["evidence"]["name"] == "decay reversed"


SMALL_SCORES = '''\
import torch

torch.manual_seed(0)
B, h, T, hs = 2, 2, 5, 12
with torch.no_grad():
    q = torch.randn(B, h, T, hs) * 0.003  # BREAKPOINT G08
    k = torch.randn(B, h, T, hs) * 0.003  # BREAKPOINT G09
    scores = q @ k.transpose(-2, -1) * SCALE  # BREAKPOINT G11
'''


def test_small_scores_scaled_by_one_over_root_hs_pass(tmp_path):
    code, checks = traced(tmp_path, SMALL_SCORES.replace("SCALE", "hs ** -0.5"))
    assert code == 0, checks[""]
    assert checks["G11"]["passed"] is True, checks["G11"]["detail"]


def test_small_scores_with_another_scale_are_named(tmp_path):
    """MLA's 1/√d_head where its queries and keys are d_head + rope_dim wide (round seventeen's mosaic-gpt B1)."""
    code, checks = traced(tmp_path, SMALL_SCORES.replace("SCALE", "8 ** -0.5"))
    assert code == 1
    assert checks["G11"]["passed"] is False
    assert checks["G11"]["evidence"]["name"] == "another scaling than 1/√hs"


FIRST_LAYER_INPUT = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
emb = nn.Embedding(20, 16)
ids = torch.randint(0, 20, (2, 5))
with torch.no_grad():
    tok = emb(ids)  # MARK_TOKENS
    x = INPUT  # MARK_INPUT
'''


MARKERS = {"gpt": ("BREAKPOINT G02", "BREAKPOINT G05"), "encoder-decoder": ("Snapshot #4", "Snapshot #6")}


def _first_layer(numbering: str, block_input: str) -> str:
    tokens, layer = MARKERS[numbering]
    return (FIRST_LAYER_INPUT.replace("MARK_TOKENS", tokens).replace("MARK_INPUT", layer)
            .replace("x = INPUT", f"x = {block_input}"))


def test_a_first_block_reading_the_token_embeddings_with_no_position_step_marked_passes(tmp_path):
    """Positions inside the attention (mosaic-gpt's rotary MLA, RetNet's decay, T5's buckets): G05 and #6 were not
    checkable, needing the catalogue's token + position step, which such a model never computes."""
    code, checks = traced(tmp_path, _first_layer("gpt", "tok"))
    assert code == 0, checks[""]
    assert checks["G05"]["passed"] is True, checks["G05"]["detail"]
    assert "token embeddings" in checks["G05"]["name"]
    (tmp_path / "ed").mkdir()
    code, checks = traced(tmp_path / "ed", _first_layer("encoder-decoder", "tok"))
    assert code == 0, checks[""]
    assert checks["#6"]["passed"] is True, checks["#6"]["detail"]


def test_a_first_block_reading_something_else_than_the_token_embeddings_does_not_pass(tmp_path):
    code, checks = traced(tmp_path, _first_layer("gpt", "tok * 2.0"))
    assert checks["G05"]["passed"] is not True, checks["G05"]["detail"]


XPOS = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
B, T, C, hs = 2, 6, 16, 8
wq, wk = nn.Linear(C, hs, bias=False), nn.Linear(C, hs, bias=False)
x = torch.randn(B, T, C)  # BREAKPOINT G05 (binds B, T and C)


def xpos(t, sign):
    """xPos as its paper writes it (ours): neighbouring channels rotated by position · 10000^(−2i/hs), each pair scaled
    by ζᵢ^(sign · position / 512), ζᵢ = (2i + 0.4 hs) / (1.4 hs)."""
    n = t.shape[-1]
    position = torch.arange(t.shape[1])[:, None]
    angle = position * 10000 ** (-torch.arange(0, n, 2) / n)
    zeta = ((torch.arange(0, n, 2) + 0.4 * n) / (1.4 * n)) ** (sign * position / 512)
    cos = (torch.cos(angle) * zeta).repeat_interleave(2, -1)
    sin = (torch.sin(angle) * zeta).repeat_interleave(2, -1)
    turned = torch.stack((-t[..., 1::2], t[..., 0::2]), -1).flatten(-2)
    return t * cos + turned * sin


with torch.no_grad():
    q_proj, k_proj = wq(x), wk(x)
    q = xpos(q_proj, 1)  # BREAKPOINT G08
    k = xpos(k_proj, SIGN)  # BREAKPOINT G09
'''


def test_xpos_queries_scaled_up_and_keys_down_are_a_rotary_form(tmp_path):
    """RetNet's xPos (Jamie-Stirling/RetNet: G08 and G09 unrecognised)."""
    code, checks = traced(tmp_path, XPOS.replace("SIGN", "-1"))
    assert code == 0, checks[""]
    for label in ("G08", "G09"):
        assert checks[label]["passed"] is True, (label, checks[label]["detail"])
        assert "xPos" in checks[label]["detail"]


def test_xpos_keys_scaled_up_like_the_queries_are_named(tmp_path):
    """RetNet's B3: `self.xpos(K)` without `downscale=True`."""
    code, checks = traced(tmp_path, XPOS.replace("SIGN", "1"))
    assert code == 1
    assert checks["G09"]["passed"] is False
    assert checks["G09"]["evidence"]["name"] == "xPos scaled the wrong way"
