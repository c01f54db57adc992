"""Probe: sys.exit(3) after a capture: python exits 3."""
import sys
import torch

y = torch.ones(2) * 3  # trace: y
print("before exit")
sys.exit(3)
