"""Probe: pickling an instance of a class defined in __main__ round-trips."""
import pickle
import torch


class Box:
    def __init__(self, t):
        self.t = t


b = Box(torch.ones(2))
y = pickle.loads(pickle.dumps(b)).t  # trace: y
print(type(pickle.loads(pickle.dumps(b))).__module__, y.tolist())
torch.save(b, "box.pt")
print(type(torch.load("box.pt", weights_only=False)).__name__)
