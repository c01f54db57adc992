"""Stub (ours, not upstream): transformers.models.gpt2."""
from . import modeling_gpt2  # noqa: F401
