"""Ours: one forward pass of the repository's ViTNetwork (transformer_scratch/vit_scratch/models/vit_model.py, its
attention and encoder layers in transformer_scratch/transformer_model.py) at a tiny size, untrained, in eval mode, as
its own `__main__` block builds it but for a 3x32x32 image and patches of 8."""
import torch

from transformer_scratch.vit_scratch.config import ViTConfig
from transformer_scratch.vit_scratch.models.vit_model import ViTNetwork

torch.manual_seed(0)
config = ViTConfig(n_classes=10, input_shape=(3, 32, 32), patch_size=8, latent_dim=32, n_layers=2, n_heads=4,
                   dropout=0.1)
model = ViTNetwork(config).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
probs = logits.softmax(dim=-1)  # BREAKPOINT S26
print(logits.shape, probs.argmax(dim=-1).tolist())
