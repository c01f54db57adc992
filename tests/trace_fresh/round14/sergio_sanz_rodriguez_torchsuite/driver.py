"""Ours: one forward pass of sergio-sanz-rodriguez/torchsuite's `DeiT` (models/deit.py: a learnpytorch.io-style ViT
with a distillation token appended after the patches and a second head reading it), untrained, in eval mode, seed 0,
at tiny sizes: two 3 x 32 x 32 images, patch 8 (16 patches, the class token first and the distillation token last:
18 tokens), width 32 in 4 heads of 8, 2 layers, MLP 64, 10 classes; dropout and drop-path 0."""
import torch

from models.deit import DeiT

torch.manual_seed(0)
model = DeiT(img_size=32, in_channels=3, patch_size=8, num_transformer_layers=2, emb_dim=32, mlp_size=64,
             num_heads=4, emb_dropout=0.0, attn_dropout=0.0, mlp_dropout=0.0, drop_path_rate=0.0,
             num_classes=10).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits, dist_logits = model(img)
print("logits", tuple(logits.shape), "distillation logits", tuple(dist_logits.shape))
