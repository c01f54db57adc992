"""Driver (ours, not upstream): Brian Pulfer's MyViT at upstream's own sizes (28×28 grey images, 7×7 patches of 4×4,
hidden 8, 2 heads, 2 blocks, 10 classes), random weights (upstream seeds 0 on import), a batch of two random images,
one forward pass in eval mode. Trace: python -m transformer_trace trace driver.py"""
import torch

from vit_torch import MyViT

model = MyViT((1, 28, 28), n_patches=7, n_blocks=2, hidden_d=8, n_heads=2, out_d=10).eval()
images = torch.rand(2, 1, 28, 28)  # BREAKPOINT S01
with torch.no_grad():
    probs = model(images)
print("predicted", probs.argmax(-1).tolist())
