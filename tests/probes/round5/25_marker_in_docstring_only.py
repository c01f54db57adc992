"""Probe: marker text only in a docstring and in a string: no real marker, expect a one-line refusal (exit 2).

# BREAKPOINT S13
"""
import torch

HELP = """
x = y  # trace: fake
"""
print(torch.ones(1).item())
