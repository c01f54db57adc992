"""Probe: the script removes its own file while running (the report quotes its code)."""
import os
import torch

y = torch.ones(2)  # trace: y
os.remove(__file__)
print("gone", os.path.exists(__file__))
