"""Ours: one forward pass of Kulbear/SimpleViT's `DeiT` (`deit.py` with `layers.py`: a class token and a distillation
token, two heads whose logits are averaged in eval mode), untrained, in eval mode, seed 0, at tiny sizes: upstream fixes
the image at 224 x 224 in patches of 16 (`PatchEmbedding(image_size=224, patch_size=16, ...)` inside `DeiT`), so two
3 x 224 x 224 images, 196 patches, 198 tokens; width 32, 4 heads of 8, 2 encoder layers, an MLP of 64; 10 classes. The
model returns a dict, `{'logit': (x_cls + x_distill) / 2}` in eval mode."""
import torch

from deit import DeiT

torch.manual_seed(0)
model = DeiT(in_channels=3, num_classes=10, embed_dim=32, num_encoders=2, num_heads=4, mlp_ratio=2.0).eval()
img = torch.randn(2, 3, 224, 224)  # BREAKPOINT S01
with torch.no_grad():
    out = model(img)
logits = out['logit']
print("logits", tuple(logits.shape))
