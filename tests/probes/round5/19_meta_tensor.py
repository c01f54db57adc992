"""Probe: capture of a tensor on the meta device (no data)."""
import torch

m = torch.empty(3, 4, device="meta")  # trace: m
y = torch.ones(2)  # trace: y
print(m.shape, m.device)
