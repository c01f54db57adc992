"""Probe: a 6-million-value tensor (over the 4 million budget) captured; README: left out of data/, pages bounded."""
import torch

big = torch.zeros(2000, 3000)  # trace: big
print(big.numel())
