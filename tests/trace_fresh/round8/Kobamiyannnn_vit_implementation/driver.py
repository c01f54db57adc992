"""Ours: one forward pass of the repository's Vit (vit.py) at a tiny size, untrained, in eval mode."""
import torch

from vit import Vit

torch.manual_seed(0)
model = Vit(in_channels=3, num_classes=10, emb_dim=32, num_patch_row=4, image_size=32, num_blocks=2, head=4,
            hidden_dim=128, dropout=0.1).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
probs = logits.softmax(dim=-1)  # BREAKPOINT S26
print(logits.shape, probs.argmax(dim=-1).tolist())
