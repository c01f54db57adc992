"""The tolerance the checks run at: float32's, a half precision's while a script's half-precision tensors are judged
(``judged_at``), and a tighter one while a failure's evidence is looked for (``judged_as_evidence``)."""

from __future__ import annotations

import contextlib
import contextvars
import typing

import torch

TOLERANCE = 1e-4  # relative to the values' scale, for float32 tensors (our models') and wider
# A script's tensors in a half-precision dtype carry about 3 (float16) or 2 (bfloat16) significant digits, and what the
# checks recompute from them inherits that: judged at that precision (``judged_at``), not at float32's.
LOW_PRECISION = {torch.float16: 1e-2, torch.bfloat16: 6e-2}
_NOW = contextvars.ContextVar("tolerance", default=TOLERANCE)


def tolerance() -> float:
    """The tolerance of the checks running now: TOLERANCE, or a half precision's while its tensors are judged."""
    return _NOW.get()


@contextlib.contextmanager
def judged_at(dtypes: typing.Iterable[torch.dtype]):
    """Run checks at the coarsest precision among ``dtypes`` (the captured tensors'); yields that dtype's tolerance."""
    coarse = max((LOW_PRECISION.get(dtype, TOLERANCE) for dtype in dtypes), default=TOLERANCE)
    token = _NOW.set(coarse)
    try:
        yield coarse
    finally:
        _NOW.reset(token)


# A half precision's tolerance is generous so that correct code passes on its rounding (a softmax of bfloat16 scores);
# a bug form or another tensor in an input's place is evidence only where it fits far closer than that: a learned
# gain fitted per channel, or a sublayer whose share of a sum is small (nGPT's update on the unit sphere, scaled by a
# step near 0.05), otherwise "fits" a tensor it is not. Evidence is judged at this fraction of that tolerance.
EVIDENCE_IN_LOW_PRECISION = 0.2


@contextlib.contextmanager
def judged_as_evidence():
    """Run a bug form's or a substitution's fit at the tolerance evidence needs (see above); float32's is kept."""
    now = _NOW.get()
    token = _NOW.set(max(TOLERANCE, now * EVIDENCE_IN_LOW_PRECISION) if now > TOLERANCE else now)
    try:
        yield
    finally:
        _NOW.reset(token)
