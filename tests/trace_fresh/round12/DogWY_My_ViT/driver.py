"""Ours: one forward pass of DogWY/My-ViT's `ViT` (vit.py, patches by a Conv2d, blocks by nn.TransformerEncoder with
batch_first=True and its final LayerNorm, a Linear-Tanh-Linear head on the class token), untrained, in eval mode. Its
patch embedding is fixed at 3 -> 256 channels with 16 x 16 patches and its position table at 197 rows, so the image
is 224 x 224 (196 patches and the class token) and the width 256; we keep the rest small: 8 heads, MLP 512, 2 layers,
10 classes, 2 images."""
import torch

from vit import ViT

torch.manual_seed(0)
model = ViT(output_dim=10, d_model=256, n_head=8, dim_feedforward=512, dropout=0.1, num_layers=2).eval()
img = torch.randn(2, 3, 224, 224)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print(logits.shape)
