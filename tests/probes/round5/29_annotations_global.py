"""Probe: annotated assignment marked, global statement in a marked function, __annotations__ contents."""
import torch

G = None
x: torch.Tensor = torch.ones(2)  # trace: x


def set_g():
    global G
    G = torch.zeros(1)  # trace: G
    return G


set_g()
print(list(__annotations__), G.tolist())
