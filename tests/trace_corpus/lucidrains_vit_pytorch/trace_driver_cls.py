"""Driver (ours, not upstream): lucidrains' ViT with pool='cls' at a tiny size (32×32 images, 8×8 patches, dim 32,
2 layers, 4 heads of 8), random weights, a batch of two random images, one forward pass in eval mode.
Trace: python -m transformer_trace trace trace_driver_cls.py"""
import torch

from vit_pytorch.vit import ViT

torch.manual_seed(0)
model = ViT(image_size=32, patch_size=8, num_classes=10, dim=32, depth=2, heads=4, dim_head=8, mlp_dim=64,
            pool="cls").eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
    probs = logits.softmax(-1)  # BREAKPOINT S26
print("predicted", probs.argmax(-1).tolist())
