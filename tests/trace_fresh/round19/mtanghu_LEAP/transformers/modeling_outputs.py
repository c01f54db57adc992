"""Stub (ours, not upstream): the output record fastformer.py returns, its fields as attributes."""
from dataclasses import dataclass
from typing import Any


@dataclass
class CausalLMOutput:
    loss: Any = None
    logits: Any = None
