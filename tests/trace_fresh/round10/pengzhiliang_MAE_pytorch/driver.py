"""Ours: one forward pass of the repository's fine-tuning VisionTransformer (modeling_finetune.py: the MAE encoder used
as a classifier, no class token, mean pooling + fc_norm) at a tiny size, untrained, in eval mode, with the options its
vit_*_patch16_224 factories set (qkv_bias=True, LayerNorm eps 1e-6), the fine-tuning script's init_scale (0.001) and
LayerScale on (init_values=0.1, BEiT's value; the fine-tuning script leaves it 0, off)."""
from functools import partial

import torch
import torch.nn as nn

from modeling_finetune import VisionTransformer

torch.manual_seed(0)
model = VisionTransformer(img_size=32, patch_size=8, in_chans=3, num_classes=10, embed_dim=32, depth=2, num_heads=4,
                          mlp_ratio=4, qkv_bias=True, norm_layer=partial(nn.LayerNorm, eps=1e-6), init_values=0.1,
                          init_scale=0.001, use_mean_pooling=True).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
probs = logits.softmax(dim=-1)  # BREAKPOINT S26
print(logits.shape, probs.argmax(dim=-1).tolist())
