"""Driver (ours, not upstream): s-chh's scratch ViT at a tiny size (32×32 images, 8×8 patches, embed 32, 2 layers,
4 heads), random weights, a batch of two random images, one forward pass in eval mode.
Trace: python -m transformer_trace trace trace_driver.py"""
import torch

from model import VisionTransformer

torch.manual_seed(0)
model = VisionTransformer(n_channels=3, embed_dim=32, n_layers=2, n_attention_heads=4, forward_mul=2, image_size=32,
                          patch_size=8, n_classes=10, dropout=0.1).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)  # BREAKPOINT S25
    probs = logits.softmax(-1)  # BREAKPOINT S26
print("predicted", probs.argmax(-1).tolist())
