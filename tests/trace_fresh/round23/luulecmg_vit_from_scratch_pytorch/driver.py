"""Ours: one forward pass of luulecmg/vit_from_scratch_pytorch's `ViT` (`modeling/vit.py`, an MNIST ViT in one file: a
Conv2d patch embedding flattened by permute and reshape, a class token (1, C) and a position table (N1, C) without a
batch axis, the table added in place, pre-norm encoders, a fused `qkv_proj` reshaped (B, N, h, hs, 3) with q, k and v
interleaved on the last axis and the heads moved first, (h, B, N, hs), no final LayerNorm, row 0 to a Linear head),
untrained, in eval mode, seed 0. Tiny sizes: two 3 x 32 x 32 images, patches of 8 (16 patches, 17 tokens), width 32,
4 heads of 8, 2 blocks, an MLP of 128 (upstream's 4 x width), 10 classes."""
import torch

from modeling.vit import ViT

torch.manual_seed(0)
model = ViT(in_channel=3, image_size=32, patch_size=8, embed_channel=32, num_head=4, mlp_scale=4, depth=2,
            num_class=10).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape), [round(v, 5) for v in logits[0, :4].tolist()])
