"""Probe: marked lines inside a property getter and a descriptor's __get__."""
import torch


class Twice:
    def __get__(self, obj, owner):
        d = obj.base * 2  # trace: desc_d
        return d


class M:
    twice = Twice()

    def __init__(self):
        self.base = torch.ones(2)

    @property
    def p(self):
        v = self.base + 1  # trace: prop_v
        return v


m = M()
print(m.p.tolist(), m.twice.tolist())
