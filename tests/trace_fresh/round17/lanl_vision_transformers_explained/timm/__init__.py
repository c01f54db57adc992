"""Ours, not upstream: a stand-in for the one name of timm (pytorch-image-models, not installed here) that
lanl/vision_transformers_explained uses, `timm.layers.trunc_normal_`, an initialiser (PyTorch's own of that name)."""
from . import layers  # noqa: F401
