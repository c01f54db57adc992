"""Ours: one forward pass of Andreathegm/Vit_from_scratch's `VisionTransformer` (`src/models/vit.py`, a learner's ViT-Tiny
for ImageNet-100 in a package of five modules: patches cut by reshape and permute and embedded by a Linear, the class
token and a learned position table in the same module, a fused `qkv` chunked in three then viewed and transposed on
lines of their own, a `ScaledDotProductAttention` module, pre-norm blocks returning (x, attn), a final LayerNorm, row
0 and an `MLPHead`), untrained, in eval mode, seed 0. Tiny sizes: two 3 x 32 x 32 images, patches of 8 (16 patches,
17 tokens), width 32, 4 heads of 8, 2 blocks, an MLP of 128 (upstream's 4 x width), 10 classes."""
import torch

from src.models.vit import VisionTransformer

torch.manual_seed(0)
model = VisionTransformer(img_size=32, patch_size=8, in_chans=3, num_classes=10, embed_dim=32, depth=2, num_heads=4,
                          mlp_ratio=4.0, dropout=0.1).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape), [round(v, 5) for v in logits[0, :4].tolist()])
