"""Ours: re-exported from torchvision."""
from torchvision.transforms._presets import ImageClassification, InterpolationMode  # noqa: F401
