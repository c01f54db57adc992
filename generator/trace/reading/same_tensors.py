"""How the trace readings tell whether two captured tensors are the same: within the checks' tolerance (a module
call's input against a step, read back through float arithmetic), or to the bit (a call fed another's very output)."""

from __future__ import annotations

import torch

from transformer_trace.checks import close


def same_tensor(a: object, b: object) -> bool:
    """Both tensors, of one shape, equal within the checks' tolerance (NaN equal to nothing)."""
    return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
            and close(a.double(), b.double(), "")[0])


def same_floats(a: object, b: object) -> bool:
    """``same_tensor``, of floating-point tensors only (token ids and masks are never a step's values)."""
    return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.is_floating_point()
            and b.is_floating_point() and same_tensor(a, b))


def equal_tensors(a: object, b: object) -> bool:
    """Both tensors, of one shape, equal to the bit (one call fed another's output as it was)."""
    return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
            and bool(torch.equal(a, b)))
