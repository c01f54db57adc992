"""Stub (ours, not upstream): the environment has no PyTorch Lightning. model.py only subclasses
`LightningModule` for its `LitGPT` wrapper; a plain `nn.Module` with a no-op `log` stands in for it."""
import torch.nn as nn


class LightningModule(nn.Module):
    def log(self, *args, **kwargs):
        pass
