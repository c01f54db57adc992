"""Ours, a stub (see ../__init__.py): the three helpers modeling_finetune.py imports from timm.models.layers, as timm
0.4.12 defines them for the way the model uses them."""
import torch


def drop_path(x, drop_prob=0.0, training=False):
    """Stochastic depth: the identity in eval mode or with no drop probability."""
    if drop_prob == 0.0 or not training:
        return x
    keep = 1 - drop_prob
    mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep)
    return x.div(keep) * mask


def to_2tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x, x)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
    return torch.nn.init.trunc_normal_(tensor, mean=mean, std=std, a=a, b=b)
