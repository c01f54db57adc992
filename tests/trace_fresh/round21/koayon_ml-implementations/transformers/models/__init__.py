"""Stub (ours, not upstream): transformers.models."""
from . import gpt2  # noqa: F401
