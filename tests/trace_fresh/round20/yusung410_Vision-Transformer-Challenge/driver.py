"""Ours: one forward pass of yusung410/Vision-Transformer-Challenge's `ViT` (`vit.py`, a student's "ViT from scratch
on CIFAR-10" split over five files), untrained, in eval mode, seed 0, at tiny sizes: two 3 x 32 x 32 images (CIFAR-10's
size) in patches of 8 (16 patches, 17 tokens with the class token); width 32, 4 heads of 8, an MLP of 64 (upstream's
`mlp_ratio=2.`); 10 classes. Upstream's model holds one `TransformerEncoder` and calls it four times (its forward
writes four calls). Two shims of ours, nothing else changed: timm is a stub (tests/trace_fresh/round20/.../timm: the one
unused name patch_embed.py imports), and patch_embed.py's `torch.device("cuda")` -- upstream sends its tokens to the
GPU unconditionally -- is the CPU here: that module's `torch` is torch with `device` answering the CPU."""
import types

import torch

import patch_embed

patch_embed.torch = types.SimpleNamespace(**{**vars(torch), "device": lambda *args, **kwargs: torch.device("cpu")})

from vit import ViT  # noqa: E402

torch.manual_seed(0)
model = ViT(img_size=32, patch_size=8, in_chans=3, num_classes=10, embed_dim=32, num_heads=4, mlp_ratio=2.).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape))
