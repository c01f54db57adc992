"""Ours: one forward pass of berniwal/swin-transformer-pytorch's SwinTransformer (`swin_transformer.py`), untrained,
in eval mode, seed 0, at tiny sizes: two 3 x 16 x 16 images; stage 1 merges 4 x 4 patches (an `nn.Unfold` and a
Linear: a 4 x 4 grid of width 8), stages 2-4 keep the grid (downscaling factor 1) and double the width (16, 32, 64);
every stage has a regular and a shifted-window block; windows of 2 x 2 tokens (4 windows of 4 tokens), heads of size 4
(2, 4, 8, 16 heads: the heads' width is the stage's), relative position bias, the grid averaged, then a LayerNorm and
the head, 10 classes."""
import torch

from swin_transformer import SwinTransformer

torch.manual_seed(0)
model = SwinTransformer(hidden_dim=8, layers=(2, 2, 2, 2), heads=(2, 4, 8, 16), channels=3, num_classes=10,
                        head_dim=4, window_size=2, downscaling_factors=(4, 1, 1, 1),
                        relative_pos_embedding=True).eval()
img = torch.randn(2, 3, 16, 16)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape))
