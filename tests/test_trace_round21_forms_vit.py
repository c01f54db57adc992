"""Round twenty-one's ViT-side forms (tests/trace_fresh/ROUND21_VIT.md), each built in a script of our own.

A step whose check cannot run for an input no marker shows still breaks, or keeps, the properties it has on its own:
Vitgracer's classifier ends in ``nn.Softmax`` (its logits never leave the ``nn.Sequential``), so S26 "needs snapshot
S25"; its B6, the softmax over the batch, went unseen though its rows then sum to 1 over the batch, not the classes."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced

SOFTMAX_CLASSIFIER = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
head = nn.Sequential(nn.Linear(16, 10), nn.Softmax(dim=AXIS))
x = torch.randn(2, 16)
with torch.no_grad():
    probs = head(x)  # BREAKPOINT S26
'''


def test_probabilities_over_the_classes_whose_logits_are_not_captured_are_not_checkable_not_red(tmp_path):
    code, checks = traced(tmp_path, SOFTMAX_CLASSIFIER.replace("AXIS", "-1"))
    assert code == 0 and checks["S26"]["passed"] is None, checks["S26"]["detail"]


@pytest.mark.parametrize("axis", ["0", "-2"])
def test_probabilities_over_the_batch_are_red_by_their_own_property_without_their_logits(tmp_path, axis):
    code, checks = traced(tmp_path, SOFTMAX_CLASSIFIER.replace("AXIS", axis))
    assert code == 1 and checks["S26"]["passed"] is False, checks["S26"]["detail"]
    assert checks["S26"]["evidence"]["name"] == "probabilities sum to 1", checks["S26"]["evidence"]
    assert "tested on this step alone" in checks["S26"]["detail"], checks["S26"]["detail"]
