"""Ours, a stub: pytorch_lightning is not installed here. transformer_scratch/vit_scratch/models/__init__.py imports
wrapper_model.py, whose training wrapper derives from pl.LightningModule; the ViT itself (vit_model.py) never uses it,
so the wrapper's base class is a plain nn.Module here."""
import torch

LightningModule = torch.nn.Module
