"""Ours: one forward pass of dmicz/minViT's `ViT` (`model.py`, the model of its "MinViT" tutorial), untrained, in eval
mode, seed 0, at tiny sizes: two 3 x 32 x 32 images (CIFAR-10's size, the tutorial's data set) in patches of 8
(16 patches, 17 tokens with the class token); width 32, 4 heads of 8, 2 blocks, an MLP of 64; upstream's default
`hybrid_embedding=True` (a convolution makes the patch embeddings) and `pretraining=False` (one Linear head); 10
classes. The model returns `(logits, loss)`; no targets are given, so the loss is None."""
import torch

from model import ViT, ViTConfig

torch.manual_seed(0)
config = ViTConfig(img_height=32, img_width=32, patch_size=8, num_heads=4, num_layers=2, mlp_dim=64, n_embd=32)
model = ViT(config).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits, _ = model(img)
print("logits", tuple(logits.shape))
