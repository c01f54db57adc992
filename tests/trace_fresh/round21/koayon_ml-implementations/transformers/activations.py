"""Stub (ours, not upstream): transformers' NewGELUActivation, GPT-2's tanh approximation of GELU."""
import math

import torch
from torch import nn


class NewGELUActivation(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
