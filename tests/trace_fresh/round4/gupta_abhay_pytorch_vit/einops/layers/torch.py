"""``Rearrange`` as a module, for the einops stand-in (ours, not upstream)."""
from torch import nn

from einops import rearrange


class Rearrange(nn.Module):
    def __init__(self, pattern, **sizes):
        super().__init__()
        self.pattern, self.sizes = pattern, sizes

    def forward(self, x):
        return rearrange(x, self.pattern, **self.sizes)
