"""Probe: two statements on a line joined by ';', marker at the end (should capture b, the last assignment)."""
import torch

a = torch.ones(2); b = torch.zeros(3)  # trace: b
print(a.tolist(), b.tolist())
