"""Ours: one forward pass of CodexEZ/ViT's `Vit` (vit.py, a learnpytorch.io-style ViT on nn.MultiheadAttention) at a
tiny size, untrained, in eval mode: width 32, 4 heads, patch 8 on a 32 x 32 image (16 patches and the class token),
2 blocks, MLP 64, 10 classes. Importing vit.py seeds torch with 42 itself; we seed 0 after the import."""
import torch

from vit import Vit

torch.manual_seed(0)
model = Vit(img_size=32, in_channels=3, patch_size=8, num_transformer_layers=2, embedding_dim=32, mlp_size=64,
            num_heads=4, num_classes=10).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print(logits.shape)
