"""Ours: one forward pass of rishikksh20/CrossViT-pytorch's CrossViT (`crossvit.py`, `module.py`), untrained, in eval
mode, seed 0, at tiny sizes: two 3 x 16 x 16 images; the small branch cuts 4 x 4 patches (16 tokens of width 16), the
large branch 8 x 8 patches (4 tokens of width 32); 2 heads in every attention (heads of 8 in the small branch, 16 in
the large); one multi-scale encoder of one block per branch and one cross-attention each way; class tokens; the two
heads' logits summed, 10 classes."""
import torch

from crossvit import CrossViT

torch.manual_seed(0)
model = CrossViT(image_size=16, channels=3, num_classes=10, patch_size_small=4, patch_size_large=8, small_dim=16,
                 large_dim=32, small_depth=1, large_depth=1, cross_attn_depth=1, multi_scale_enc_depth=1, heads=2,
                 scale_dim=2).eval()
img = torch.randn(2, 3, 16, 16)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape))
