"""Ours: one forward pass of nicolagheza/ViT-from-scratch's `ViT` (`model/vit.py`, a learner's "ViT from Scratch" for
CIFAR-10 in a package of four modules: a Conv2d patch embedding with the class token and a learned position table in
one module, pre-norm `TransformerBlock`s in an `nn.Sequential`, a fused `qkv_proj` chunked in three then each part
reshaped and transposed on a line of its own, the context merged on the line that computes it, a final LayerNorm and
row 0 to a Linear classifier), untrained, in eval mode, seed 0. Tiny sizes: two 3 x 32 x 32 images, patches of 8 (16
patches, 17 tokens), width 32, 4 heads of 8, 2 blocks, an MLP of 128 (upstream's 4 x width), 10 classes."""
import torch

from model.vit import ViT

torch.manual_seed(0)
model = ViT(img_size=32, patch_size=8, in_channels=3, d_model=32, num_heads=4, num_layers=2, num_classes=10,
            dropout=0.1).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape), [round(v, 5) for v in logits[0, :4].tolist()])
