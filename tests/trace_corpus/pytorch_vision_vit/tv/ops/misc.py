"""Ours: re-exported from torchvision."""
from torchvision.ops.misc import MLP, Conv2dNormActivation  # noqa: F401
