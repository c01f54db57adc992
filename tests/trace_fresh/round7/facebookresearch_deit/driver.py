"""Ours: one forward pass of DeiT III's ViT with LayerScale (models_v2.py, the deit_*_LS configuration: LayerNorm eps
1e-6, qkv bias, Layer_scale_init_Block) at a tiny size, untrained, in eval mode."""
from functools import partial

import torch
import torch.nn as nn

from models_v2 import Layer_scale_init_Block, vit_models

torch.manual_seed(0)
model = vit_models(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=4, mlp_ratio=4, qkv_bias=True,
                   num_classes=10, norm_layer=partial(nn.LayerNorm, eps=1e-6),
                   block_layers=Layer_scale_init_Block).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
probs = logits.softmax(dim=-1)  # BREAKPOINT S26
print(logits.shape, probs.argmax(dim=-1).tolist())
