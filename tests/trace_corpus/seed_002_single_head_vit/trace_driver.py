"""Driver (ours): seed 002's SingleHeadAttentionViT (one head, no heads axis: Q, K, V are (B, N, D), the scores
(B, N, N)) at a tiny size (32×32 images, 8×8 patches, embed 32), random weights, a batch of two random images, one
forward pass. Trace: python -m transformer_trace trace trace_driver.py"""
import torch

from single_head_vit import SingleHeadAttentionViT

torch.manual_seed(0)
model = SingleHeadAttentionViT(img_size=32, patch_size=8, embed_dim=32, num_classes=10).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
    probs = logits.softmax(-1)  # BREAKPOINT S26
print("predicted", probs.argmax(-1).tolist())
