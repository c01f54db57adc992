"""What round twenty's first result on fresh GPT and encoder–decoder code missed (tests/trace_fresh/ROUND20_GPT.md),
built here in scripts of our own, none from the upstream code (dwzhang00/Offline-translation, jaketae/alibi).

- Every key masked (Offline-translation B5, #11 had been unrecognised: an inverted padding mask, ``mask == True``
  filled, hides every key of every query, each row uniform): a broken property of any attention where real keys
  exist — the captured mask allows the row some key, or the keys' token IDs are not all one ID (padding is one ID).
  A padded query of an all-padding sequence (one ID throughout) is no evidence: never red (checks/blind_rows.py)."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

# an encoder's self-attention, its padding mask built from the source IDs (True = keep), filled where FILLED
ENCODER_ATTENTION = '''\
import torch

torch.manual_seed(0)
B, h, S, hs = 2, 2, 6, 8
with torch.no_grad():
    src = SOURCE  # Snapshot #1
    q = torch.randn(B, h, S, hs)
    k = torch.randn(B, h, S, hs)
    mask = (src != 0).reshape(B, 1, 1, S)
    scores = q @ k.transpose(-2, -1) / hs ** 0.5  # Snapshot #10
    weights = torch.softmax(scores.masked_fill(FILLED, -1e9), dim=-1)  # Snapshot #11
'''
REAL = "torch.randint(2, 30, (B, S))"
LAST_ITEM_PADDING = "torch.cat([torch.randint(2, 30, (1, S)), torch.zeros(1, S, dtype=torch.long)])"


def _encoder(source: str, filled: str) -> str:
    return ENCODER_ATTENTION.replace("SOURCE", source).replace("FILLED", filled)


def test_an_inverted_padding_mask_hiding_every_real_key_is_red_at_the_weights(tmp_path):
    code, checks = traced(tmp_path, _encoder(REAL, "mask == True"))
    assert code == 1 and checks["#11"]["passed"] is False, checks["#11"]["detail"]
    evidence = checks["#11"]["evidence"]
    assert evidence["name"] == "some real key seen by every real query", evidence
    assert "every key masked" in evidence["message"] and "2 of 2 batch items" in evidence["message"], evidence


@pytest.mark.parametrize("source", [REAL, LAST_ITEM_PADDING])
def test_a_correct_padding_mask_is_never_red_by_the_property(tmp_path, source):
    """An all-padding item (every key masked, each row uniform) beside a real one: its rows are by design."""
    code, checks = traced(tmp_path, _encoder(source, "mask == False"))
    assert checks["#11"]["passed"] is not False, checks["#11"]["detail"]


def test_an_all_padding_item_whose_rows_see_no_key_is_no_evidence(tmp_path):
    """Every key of every item masked where one item is all padding and the other real: only the real item is
    evidence (1 of 2)."""
    code, checks = traced(tmp_path, _encoder(LAST_ITEM_PADDING, "torch.ones_like(mask)"))
    assert checks["#11"]["passed"] is False, checks["#11"]["detail"]
    assert "1 of 2 batch items" in checks["#11"]["evidence"]["message"], checks["#11"]["evidence"]
