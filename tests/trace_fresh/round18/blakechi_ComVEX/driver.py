"""Ours: one forward pass of blakechi/ComVEX's ConViT (`comvex/convit/model.py`, `ConViTWithLinearClassifier`, with
the package's `transformer`, `vit` and `utils` it imports), untrained, in eval mode, seed 0, at tiny sizes: two
3 x 16 x 16 images cut into 4 x 4 patches by an einops `Rearrange` (16 patches of 48 values), a bias-free Linear to
width 16; two local layers of gated positional self-attention (GPSA: 4 heads of 4, locality strength 1) on the 16
patches alone, no class token, no position table; then the class token joins and one ordinary (non-local) layer of
the package's `MultiheadAttention` runs on 17 tokens; post-norm layers (the package's default `pre_norm=False`), an
MLP of width 16 (what the package's `FeedForward` makes of these arguments); the class row through the projection
head (Linear, ReLU, Dropout, LayerNorm, Linear) to 10 classes. einops is our stand-in (tests/stubs)."""
import torch

from comvex.convit import ConViTConfig, ConViTWithLinearClassifier

torch.manual_seed(0)
config = ConViTConfig(image_size=16, image_channel=3, patch_size=4, num_local_layers=2, num_nonlocal_layers=1, dim=16,
                      num_classes=10, locality_strength=1.0, heads=4)
model = ConViTWithLinearClassifier(config).eval()
img = torch.randn(2, 3, 16, 16)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape))
