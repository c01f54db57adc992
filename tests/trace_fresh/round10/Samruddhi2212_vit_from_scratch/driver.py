"""Ours: one forward pass of the repository's ViT (models/vit.py, its parts in models/) at a tiny size, untrained, in
eval mode, with global average pooling over the patch tokens (use_cls_token=False, the repository's own ablation
switch: the class token is kept in the sequence but not pooled) and the pre-norm blocks."""
import torch

from configs.config import ViTConfig
from models.vit import ViT

torch.manual_seed(0)
config = ViTConfig(image_size=32, patch_size=8, in_channels=3, d_model=32, num_heads=4, num_layers=2, ffn_hidden=64,
                   dropout=0.1, num_classes=10)
model = ViT(config, use_cls_token=False).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
probs = logits.softmax(dim=-1)  # BREAKPOINT S26
print(logits.shape, probs.argmax(dim=-1).tolist())
