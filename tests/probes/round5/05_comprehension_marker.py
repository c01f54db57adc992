"""Probe: markers on comprehension lines (list, dict, generator into sum) and walrus inside one."""
import torch

xs = [torch.tensor([float(i)]) for i in range(3)]  # trace: xs
d = {i: t * 2 for i, t in enumerate(xs)}  # trace: d
s = sum(t for t in xs)  # trace: s
ys = [y for t in xs if (y := t * 10).item() > 5]  # trace: ys
print(len(xs), sorted(d), s.item(), [y.item() for y in ys])
