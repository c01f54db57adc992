"""The wrong forms of an attention's context that a trace names, per head (G15) and with the heads concatenated (G16),
read on scripts of our own (checks/context_forms.py): the probabilities transposed, Pᵀ·V, as an einsum with its query
and key labels swapped writes it (round twenty-two's picoclvr B6, `einsum("nhst,nhsd->nthd", a, v)`)."""

from __future__ import annotations

import pytest

from tests.conftest import trace_source as traced
from tests.test_trace_round21_forms_gpt import CONTEXT_EINSUM

# round twenty-one's causal attention of ours, its context line given per test
ATTENTION = CONTEXT_EINSUM.replace("context = torch.einsum(LABELS, probs, v)  # BREAKPOINT G15", "CONTEXT")
PER_HEAD = 'context = torch.einsum("LABELS->bhqd", probs, v)  # BREAKPOINT G15'
MERGED = 'context = torch.einsum("LABELS->bqhd", probs, v).flatten(2)  # BREAKPOINT G16'
TRANSPOSED = "the probabilities transposed"


@pytest.mark.parametrize("step, line", [("G15", PER_HEAD), ("G16", MERGED)])
def test_a_context_over_the_keys_passes(tmp_path, step, line):
    code, checks = traced(tmp_path, ATTENTION.replace("CONTEXT", line.replace("LABELS", "bhqk,bhkd")))
    assert code == 0 and checks[step]["passed"] is True, checks[step]["detail"]


@pytest.mark.parametrize("step, line", [("G15", PER_HEAD), ("G16", MERGED)])
def test_a_context_from_the_probabilities_transposed_is_named_at_its_step(tmp_path, step, line):
    code, checks = traced(tmp_path, ATTENTION.replace("CONTEXT", line.replace("LABELS", "bhkq,bhkd")))
    assert code == 1 and checks[""]["first_failure"].startswith(step), checks[""]
    assert checks[step]["evidence"]["name"] == TRANSPOSED, checks[step]
    assert "the values of the queries that attend to it" in checks[step]["detail"], checks[step]["detail"]
