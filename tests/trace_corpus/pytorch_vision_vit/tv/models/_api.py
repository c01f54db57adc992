"""Ours: what vision_transformer.py imports from torchvision.models._api. ``register_model`` is a no-op here: the
real one refuses a second registration of the names torchvision itself registered (vit_b_16, ...)."""
from torchvision.models._api import Weights, WeightsEnum  # noqa: F401


def register_model(name=None):
    return lambda fn: fn
