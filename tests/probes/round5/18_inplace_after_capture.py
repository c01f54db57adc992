"""Probe: tensors changed in place after capture (the capture must hold the value when its line ran)."""
import torch

x = torch.arange(4.0)
y = x * 2  # trace: y
y.add_(100)
v = x[:2]  # trace: v
x.mul_(0)
print(y.tolist(), v.tolist())
