"""Ours, a stub (see ../__init__.py): the three helpers cls_cvt.py imports from timm.models.layers (to_2tuple unused), as timm defines
them for the way the model uses them (DropPath is only built with a drop probability above 0, never here)."""
import torch
from torch import nn


class DropPath(nn.Module):
    """Stochastic depth: the identity in eval mode or with no drop probability."""

    def __init__(self, drop_prob=0.0):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        if self.drop_prob == 0.0 or not self.training:
            return x
        keep = 1 - self.drop_prob
        mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep)
        return x.div(keep) * mask


def to_2tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x, x)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
    return torch.nn.init.trunc_normal_(tensor, mean=mean, std=std, a=a, b=b)
