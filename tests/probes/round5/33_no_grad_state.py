"""Probe: grad mode and requires_grad of a marked line's result; backward after capture."""
import torch

w = torch.ones(2, requires_grad=True)
y = (w * 3).sum()  # trace: y
y.backward()
with torch.no_grad():
    z = w * 2  # trace: z
print(y.requires_grad, z.requires_grad, w.grad.tolist(), torch.is_grad_enabled())
