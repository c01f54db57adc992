"""Driver (ours, not upstream): asyml's Vision Transformer (`src/model.py`, `VisionTransformer`, a port of the
official JAX ViT with `LinearGeneral` tensordot projections) at a tiny size (32×32 images, 8×8 patches, width 32,
MLP 64, 2 blocks, 4 heads, 10 classes), a seed, upstream's own random initialisation, a batch of two random images,
one forward pass in eval mode (dropout 0.1 built, inactive); the softmax over the 10 logits is ours.
Trace: python -m transformer_trace trace driver.py"""
import torch

from src.model import VisionTransformer

torch.manual_seed(0)
model = VisionTransformer(image_size=(32, 32), patch_size=(8, 8), emb_dim=32, mlp_dim=64, num_heads=4, num_layers=2,
                          num_classes=10, dropout_rate=0.1).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
    probs = logits.softmax(-1)  # BREAKPOINT S26
print("predicted", probs.argmax(-1).tolist())
