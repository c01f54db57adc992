"""Ours: one forward pass of the repository's ViT (models/vit.py) at a tiny size, untrained, in eval mode."""
import torch

from models.vit import ViT

torch.manual_seed(0)
model = ViT(in_channels=3, d_model=32, num_layers=2, num_heads=4, mlp_dim=64, dropout_rate=0.1,
            stochastic_path_rate=0.1, image_size=32, patch_size=8, num_classes=10).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
probs = logits.softmax(dim=-1)  # BREAKPOINT S26
print(logits.shape, probs.argmax(dim=-1).tolist())
