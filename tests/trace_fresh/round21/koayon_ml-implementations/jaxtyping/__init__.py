"""Stub (ours, not upstream): jaxtyping's `Float[...]` / `Int[...]` annotations, here plain `torch.Tensor`."""
import torch


class _Annotation:
    def __getitem__(self, item):
        return torch.Tensor


Float = _Annotation()
Int = _Annotation()
