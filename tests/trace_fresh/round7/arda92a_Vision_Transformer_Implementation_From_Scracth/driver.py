"""Ours: one forward pass of the repository's ViT (Models/ViT.py) at a tiny size, untrained, in eval mode."""
import torch

from Models.ViT import ViT

torch.manual_seed(0)
model = ViT(img_size=32, in_channels=3, patch_size=8, embedding_dim=32, num_transformer_layers=2, num_heads=4,
            attn_dropout=0.0, mlp_size=128, mlp_dropout=0.1, num_classes=10).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
probs = logits.softmax(dim=-1)  # BREAKPOINT S26
print(logits.shape, probs.argmax(dim=-1).tolist())
