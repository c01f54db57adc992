"""Ours: one forward pass of the repository's ViT (model/vit.py) at a tiny size, untrained, in eval mode."""
import torch

from model.config import ViTConfig
from model.vit import ViT

torch.manual_seed(0)
config = ViTConfig(image_size=32, num_classes=10, hidden_states=32, patch_size=8, num_layers=2)
model = ViT(config).eval()
img = torch.randn(2, config.num_channels, config.image_size, config.image_size)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
probs = logits.softmax(dim=-1)  # BREAKPOINT S26
print(logits.shape, probs.argmax(dim=-1).tolist())
