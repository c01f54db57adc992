"""Ours: one forward pass of ADulian/Vision_Transformer's `Vision_Transformer` (vit.py) at a tiny size, untrained, in
eval mode: width 32, 4 heads of 8, patch 8 on a 32 x 32 image (16 patches and the class token), 2 layers, MLP 64.
The class takes a device (it keeps it for its own fit/test loops) and makes its Adam optimizer in __init__; neither
runs here."""
import torch

from vit import Vision_Transformer

torch.manual_seed(0)
model = Vision_Transformer(device=torch.device("cpu"), num_classes=10, img_size=32, in_channels=3, num_layers=2,
                           num_heads=4, patch_size=8, embedding_dim=32, forward_expansion=2).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print(logits.shape)
