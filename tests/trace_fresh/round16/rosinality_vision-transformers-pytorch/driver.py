"""Ours: one forward pass of rosinality/vision-transformers-pytorch's Twins-SVT (`models/twins.py`), untrained, in
eval mode, seed 0, at tiny sizes: two 3 x 64 x 64 images; each of the 4 stages merges patches with a Linear and a
LayerNorm (4 x 4, then 2 x 2: grids of 16 x 16, 8 x 8, 4 x 4, 2 x 2), widths 8, 16, 32, 32 in heads of 4 (2, 4, 8,
8 heads), 2 layers in the first stage and 1 in the others; every layer is a locally-grouped attention over 2 x 2
windows, an MLP, a global attention whose keys and values come from the grid reduced by a 2 x 2 convolution of
stride 2, and an MLP (SiLU, twice the width); a conditional position encoding (a depthwise 3 x 3 convolution added
to its input) after each stage's first layer; a LayerNorm, the grid averaged, 10 classes."""
import torch

from models.twins import TwinsSVT

torch.manual_seed(0)
model = TwinsSVT(n_class=10, depths=(2, 1, 1, 1), dims=(8, 16, 32, 32), dim_head=4, n_heads=(2, 4, 8, 8),
                 dim_ffs=(16, 32, 64, 64), window_size=2).eval()
img = torch.randn(2, 3, 64, 64)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape))
