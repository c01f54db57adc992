"""Driver (ours): seed 003's ViT-Tiny at a tinier size (32×32 images, 8×8 patches, embed 48, 2 blocks, 3 heads),
random weights, a batch of two random images, one forward pass in eval mode. Trace: python -m transformer_trace trace trace_driver.py"""
import torch

from vit_tiny import VisionTransformer

torch.manual_seed(0)
model = VisionTransformer(img_size=32, patch_size=8, in_channels=3, num_classes=10, embed_dim=48, depth=2, num_heads=3,
                          mlp_ratio=2.0, dropout=0.1).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
    probs = logits.softmax(-1)  # BREAKPOINT S26
print("predicted", probs.argmax(-1).tolist())
