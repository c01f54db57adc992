"""Ours: re-exported from torchvision."""
from torchvision.models._meta import _IMAGENET_CATEGORIES  # noqa: F401
