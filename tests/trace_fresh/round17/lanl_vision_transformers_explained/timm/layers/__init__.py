"""Ours, not upstream: `trunc_normal_`, the only name upstream reads from timm.layers: PyTorch's initialiser."""
from torch.nn.init import trunc_normal_  # noqa: F401
