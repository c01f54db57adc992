"""Stub (ours, not upstream): fancy_einsum's `einsum(equation, *operands)`, axis names of several letters, each name
made one letter of a torch.einsum equation (the real package does the same). koayon/ml-implementations' helpers.py
wraps it."""
import re

import torch


def einsum(equation, *operands):
    letters = {}

    def side(text):
        return "".join(letters.setdefault(name, chr(ord("a") + len(letters))) for name in re.findall(r"\w+", text))

    inputs, output = equation.split("->")
    return torch.einsum(",".join(side(part) for part in inputs.split(",")) + "->" + side(output), *operands)
