"""Ours: re-exported from torchvision."""
from torchvision.models._utils import _ovewrite_named_param, handle_legacy_interface  # noqa: F401
