"""Ours: one forward pass of Ruian7P/Tiny-ViT-from-Scratch-on-CIFAR100's `VisionTransformer` (model.py) at a tiny
size, untrained, in eval mode, seed 0: width 32, 4 heads, patch 8 on a 32 x 32 image (16 patches and the class token),
2 blocks, MLP 64, 100 classes (CIFAR-100's), two random images."""
import torch

from model import VisionTransformer

torch.manual_seed(0)
model = VisionTransformer(image_size=32, patch_size=8, in_channels=3, embed_dim=32, num_heads=4, mlp_dim=64,
                          num_layers=2, num_classes=100).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape))
