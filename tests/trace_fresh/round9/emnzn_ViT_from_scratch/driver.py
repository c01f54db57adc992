"""Ours: one forward pass of the repository's VisionTransformer (src/utils/vit.py, copied here as vit.py: the package's
__init__ imports its training utilities too) at a tiny size, untrained, in eval mode, with the sinusoidal position table
(learnable_pe=False; the learnable one starts at zeros)."""
import torch

from vit import VisionTransformer

torch.manual_seed(0)
model = VisionTransformer(patch_size=8, num_channels=3, hidden_size=32, sequence_len=(32 // 8) ** 2 + 1, num_heads=4,
                          num_layers=2, mlp_size=64, dropout_probability=0.1, num_classes=10, learnable_pe=False).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
probs = logits.softmax(dim=-1)  # BREAKPOINT S26
print(logits.shape, probs.argmax(dim=-1).tolist())
