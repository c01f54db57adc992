"""Ours: one forward pass of nanoVLM's vision encoder (models/vision_transformer.py, a SigLIP-style ViT) at a tiny size,
untrained, in eval mode, with the repository's default `vit_cls_flag=False` (no class token: the encoder returns the
LayerNorm of the whole patch sequence, which nanoVLM's modality projector reads; there is no classifier head). The
configuration is a namespace of ours holding only the `vit_*` fields the module reads (models/config.py's VLMConfig
holds the language model's too)."""
from types import SimpleNamespace

import torch

from models.vision_transformer import ViT

torch.manual_seed(0)
cfg = SimpleNamespace(vit_hidden_dim=32, vit_inter_dim=64, vit_patch_size=8, vit_img_size=32, vit_n_heads=4,
                      vit_dropout=0.1, vit_n_blocks=2, vit_ln_eps=1e-6, vit_cls_flag=False)
model = ViT(cfg).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    features = model(img)
print(features.shape)
