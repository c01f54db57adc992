"""Driver (ours, not upstream): lukemelas' PyTorch-Pretrained-ViT at a tiny size (32×32 images, 8×8 patches, dim 32,
2 layers, 4 heads, ff 64), random weights, a batch of two random images, one forward pass in eval mode.
Trace: python -m transformer_trace trace driver.py"""
import torch

import pytorch_pretrained_vit.model as vit_model
from pytorch_pretrained_vit import ViT

# Upstream's ViT.__init__ reads a name it never defines (`assert not resize_positional_embedding`) when no pretrained
# name is given; defining it as False in the module is the one change that lets the class build without weights.
vit_model.resize_positional_embedding = False

torch.manual_seed(0)
model = ViT(patches=8, dim=32, ff_dim=64, num_heads=4, num_layers=2, dropout_rate=0.1, image_size=32, num_classes=10).eval()
with torch.no_grad():  # upstream zero-initialises the class token and the head: random values make their steps visible
    model.class_token.normal_(std=0.02)
    model.fc.weight.normal_(std=0.02)
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
    probs = logits.softmax(-1)  # BREAKPOINT S26
print("predicted", probs.argmax(-1).tolist())
