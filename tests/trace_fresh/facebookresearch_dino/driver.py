"""Driver (ours, not upstream): DINO's VisionTransformer at a tiny size (32×32 images, 8×8 patches, dim 32, 2 blocks,
4 heads, qkv bias, LayerNorm eps 1e-6 as upstream's vit_tiny), random weights, a batch of two random images, one
forward pass in eval mode. Upstream's forward returns the class token's features; the driver applies the model's own
`head` to them. Trace: python -m transformer_trace trace driver.py"""
from functools import partial

import torch
import torch.nn as nn

from vision_transformer import VisionTransformer

torch.manual_seed(0)
model = VisionTransformer(img_size=[32], patch_size=8, num_classes=10, embed_dim=32, depth=2, num_heads=4, mlp_ratio=4,
                          qkv_bias=True, norm_layer=partial(nn.LayerNorm, eps=1e-6)).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    features = model(img)
    logits = model.head(features)  # BREAKPOINT S25
    probs = logits.softmax(-1)  # BREAKPOINT S26
print("predicted", probs.argmax(-1).tolist())
