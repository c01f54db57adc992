"""Stub (ours, not upstream): the Hugging Face classes gpt/model.py and helpers.py name in annotations and in the
pretrained-weight loader the driver never calls."""
from torch import nn


class GPT2Block(nn.Module):
    pass


class GPT2LMHeadModel(nn.Module):
    pass
