"""Ours: one forward pass of aanna0701/SPT_LSA_ViT's `ViT` (`models/vit.py`, "Vision Transformer for Small-Size
Datasets") with both of the paper's additions on, `is_SPT=True` (Shifted Patch Tokenization: the image and four copies
shifted diagonally by half a patch, concatenated on the channels, cut into patches, LayerNorm, Linear) and
`is_LSA=True` (Locality Self-Attention: a learned temperature per head and the diagonal of the scores masked),
untrained, in eval mode, seed 0, at tiny sizes: two 3 x 32 x 32 images in patches of 8 (16 patches, 17 tokens with the
class token); width 32, 4 heads of 8, 2 layers, an MLP of 64; 10 classes. einops is our stand-in (tests/stubs)."""
import torch

from models.vit import ViT

torch.manual_seed(0)
model = ViT(img_size=32, patch_size=8, num_classes=10, dim=32, depth=2, heads=4, mlp_dim_ratio=2, dim_head=8,
            is_LSA=True, is_SPT=True).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape))
