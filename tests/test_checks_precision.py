"""The tolerance checks run at (generator/checks/precision.py): float32's for float32 tensors, a half precision's while
half-precision tensors are judged, and, while a failure's evidence is looked for, a fifth of a half precision's, so
that a fit that passes only on the rounding allowance is no evidence (round twenty-three's nGPT: a LayerNorm over the
wrong axes and another tensor in a residual sum's place each "fitted" within bfloat16's 6e-2)."""

from __future__ import annotations

import pytest
import torch

from transformer_trace.checks import close, judged_at, tolerance
from transformer_trace.checks.evidence import BugForm, Fit, find_evidence
from transformer_trace.checks.precision import EVIDENCE_IN_LOW_PRECISION, LOW_PRECISION, TOLERANCE, judged_as_evidence

EXPECTED = torch.linspace(-1.0, 1.0, 64, dtype=torch.float64)
OFF_BY = EXPECTED + 0.03  # within bfloat16's allowance (6e-2), far outside its rounding (about 4e-3)


def test_float32_tolerance_is_the_same_for_evidence():
    with judged_as_evidence():
        assert tolerance() == TOLERANCE


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_half_precisions_evidence_is_judged_at_a_fifth_of_its_tolerance(dtype):
    with judged_at([dtype]):
        assert tolerance() == LOW_PRECISION[dtype]
        with judged_as_evidence():
            assert tolerance() == pytest.approx(LOW_PRECISION[dtype] * EVIDENCE_IN_LOW_PRECISION)
        assert tolerance() == LOW_PRECISION[dtype]


def test_a_bug_form_that_fits_only_on_bfloat16s_allowance_is_no_evidence():
    class Claim:
        BUG_FORMS = (BugForm("a form", "off by 0.03", lambda check, s: Fit(*close(OFF_BY, EXPECTED, "vs the form"))),)
        PROPERTIES = ()
        SUBSTITUTES = False

    with judged_at([torch.bfloat16]):
        assert close(OFF_BY, EXPECTED, "")[0]  # a correct form would pass so
        evidence, tried = find_evidence(Claim(), None)
    assert evidence is None and tried and tried[0].startswith("a form: vs the form: largest difference 3.0e-02")
    with judged_at([torch.float16]):  # float16's allowance (1e-2) does not cover 0.03 at all
        assert find_evidence(Claim(), None)[0] is None
