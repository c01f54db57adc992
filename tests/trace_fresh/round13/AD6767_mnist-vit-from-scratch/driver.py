"""Ours: one forward pass of AD6767/mnist-vit-from-scratch's `VisionTransformer` (models/vit.py), untrained, in eval
mode, seed 0. Its sizes are fixed in upstream's config.py (an MNIST image of 1 x 28 x 28, patch 7: 16 patches and the
class token, width 20, 4 heads of 5, 4 blocks, MLP 64, 10 classes); we use them as they are, on two random images."""
import torch

from models.vit import VisionTransformer

torch.manual_seed(0)
model = VisionTransformer().eval()
img = torch.randn(2, 1, 28, 28)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape))
