"""Probe: dicts of tensors (README: captured too) with str keys and int keys: every value must reach data/."""
import torch

named = {"a": torch.ones(2), "b": torch.zeros(3), "c": torch.arange(4.0)}  # trace: named
numbered = {0: torch.ones(2), 1: torch.zeros(2), 2: torch.full((2,), 2.0)}  # trace: numbered
print(len(named), len(numbered))
