"""Ours: one forward pass of open_clip's VisionTransformer (the CLIP image tower) at a tiny size, untrained."""
import torch

from open_clip.transformer import VisionTransformer

torch.manual_seed(0)
model = VisionTransformer(image_size=32, patch_size=8, width=32, layers=2, heads=4, mlp_ratio=4.0,
                          output_dim=10).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    features = model(img)
probs = features.softmax(dim=-1)  # BREAKPOINT S26
print(features.shape, probs.argmax(dim=-1).tolist())
