"""The module running a line shared by several uses (child/running_module.py), named as ``named_modules()`` names it,
at a cost a traced run can afford: the outermost module's names are read once per run, and reading them costs a few
Python calls a module, not the ~8 of ``named_modules``' nested generators (a 100-module model: ~850 calls a run)."""

from __future__ import annotations

import sys

import torch
import torch.nn as nn

from transformer_trace.trace.child.running_module import _holds, _named, running_module


class Block(nn.Module):
    def __init__(self, shared: nn.Module):
        super().__init__()
        self.attn = nn.Linear(8, 8)
        self.mlp = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))
        self.tied = shared  # one module registered twice: named where first found
        self.absent = None  # a child slot left empty
        self.seen = None

    def forward(self, x):
        self.seen = sys._getframe()
        return self.mlp(self.attn(x))


class Model(nn.Module):
    def __init__(self, depth: int = 12):
        super().__init__()
        shared = nn.LayerNorm(8)
        self.norm = shared
        self.layers = nn.ModuleList([Block(shared) for _ in range(depth)])
        self.heads = nn.ModuleDict({"out": nn.Linear(8, 4)})

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.heads["out"](x)


def test_the_names_read_are_named_modules_own_in_its_order():
    model = Model()
    assert [(name, module) for name, module in _named(model).values()] == list(model.named_modules())


def test_the_sublayer_a_module_holds_is_read_from_the_same_names():
    assert _holds(Model().layers[0]) is None  # an attention and an MLP projection outside it: a whole block
    assert _holds(nn.Sequential(nn.Linear(8, 8))) == "mlp"


def _python_calls(function, *args):
    """The calls (Python and built-in) ``function(*args)`` makes, as a profiler counts them."""
    counted = [0]

    def count(frame, event, arg):
        if event in ("call", "c_call"):
            counted[0] += 1
    sys.setprofile(count)
    try:
        found = function(*args)
    finally:
        sys.setprofile(None)
    return found, counted[0]


def test_naming_the_running_module_costs_a_few_calls_a_module_of_the_model():
    model = Model()
    with torch.no_grad():
        model(torch.randn(2, 8))
    frame, names, modules = model.layers[5].seen, {}, len(list(model.modules()))
    found, first = _python_calls(running_module, frame, names)
    again, later = _python_calls(running_module, frame, names)  # the names read once per outermost module
    assert [step[0] for step in found] == ["", "layers", "5"] and again == found
    assert first - later < 6 * modules  # with named_modules (its nested generators): over 10 a module
