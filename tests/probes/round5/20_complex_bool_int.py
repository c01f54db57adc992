"""Probe: complex, bool, int8 and int64 tensors captured."""
import torch

c = torch.tensor([1 + 2j, 3 - 1j])  # trace: c
b = torch.tensor([True, False, True])  # trace: b
i8 = torch.tensor([-128, 0, 127], dtype=torch.int8)  # trace: i8
big = torch.tensor([2**62, -(2**62)])  # trace: big
print(c.abs().tolist(), b.sum().item(), i8.tolist(), big.tolist())
