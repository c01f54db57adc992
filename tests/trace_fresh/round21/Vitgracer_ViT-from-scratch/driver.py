"""Ours: one forward pass of Vitgracer/ViT-from-scratch's `SimpleViT` (`model/vit/simple_vit.py`: a convolutional
patch embedder, a learned class token and positions, pre-norm blocks whose attention is one `AttentionHead` module per
head, no final LayerNorm, a classifier ending in `nn.Softmax`), untrained, in eval mode, seed 0, at tiny sizes: two
3 x 32 x 32 images in patches of 8 (16 patches, 17 tokens); width 32, 4 heads of 8, 2 blocks, an MLP of 64; upstream
fixes the classifier at 10 classes. The model returns the probabilities (its classifier's `nn.Softmax`). einops is our
stand-in (tests/stubs)."""
import torch

from model.vit.simple_vit import SimpleViT

torch.manual_seed(0)
model = SimpleViT(in_channels=3, image_size=32, patch_size=8, hidden_dim=32, num_layers=2, head_size=8, num_heads=4,
                  mlp_hidden_size=64).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    probs = model(img)
print("probabilities", tuple(probs.shape), [round(v, 5) for v in probs[0, :4].tolist()])
