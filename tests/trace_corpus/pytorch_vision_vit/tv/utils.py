"""Ours: re-exported from torchvision."""
from torchvision.utils import _log_api_usage_once  # noqa: F401
