"""The trace readings' one set of tensor comparisons (generator/trace/reading/same_tensors.py): the same within the
checks' tolerance, the same floating-point values, or equal to the bit; never the same across shapes, with NaN, or
where either side is not a tensor."""

from __future__ import annotations

import pytest
import torch

from transformer_trace.trace.reading.same_tensors import equal_tensors, same_floats, same_tensor

X = torch.linspace(-1.0, 1.0, 12).reshape(3, 4)


@pytest.mark.parametrize("other, same, floats, equal", [
    (X.clone(), True, True, True),
    (X * (1 + 3e-7), True, True, False),  # read back through float arithmetic: the same, not to the bit
    (X + 1e-3, False, False, False),  # past the tolerance (1e-4 here)
    (X.reshape(4, 3), False, False, False),  # the same values in another shape
    (X.double(), True, True, True),  # the same values in another dtype
    (None, False, False, False),
])
def test_a_tensor_compared_with_another(other, same, floats, equal):
    assert (same_tensor(X, other), same_floats(X, other), equal_tensors(X, other)) == (same, floats, equal)
    assert (same_tensor(other, X), same_floats(other, X), equal_tensors(other, X)) == (same, floats, equal)


def test_integer_tensors_are_the_same_values_but_never_the_same_floats():
    ids = torch.arange(6).reshape(2, 3)
    assert same_tensor(ids, ids.clone()) and equal_tensors(ids, ids.clone())
    assert not same_floats(ids, ids.clone())


def test_nan_is_the_same_as_nothing():
    with_nan = X.clone()
    with_nan[0, 0] = float("nan")
    assert not same_tensor(with_nan, with_nan.clone()) and not same_floats(with_nan, with_nan.clone())
