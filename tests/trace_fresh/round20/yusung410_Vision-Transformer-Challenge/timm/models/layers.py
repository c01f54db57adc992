"""Ours, a stub of timm.models.layers: only the name upstream imports, as torch's own initialiser."""
from torch.nn.init import trunc_normal_  # noqa: F401
