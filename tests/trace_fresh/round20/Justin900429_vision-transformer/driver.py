"""Ours: one forward pass of Justin900429/vision-transformer's `CaiT` (`CaiT/cait.py`, "Going deeper with Image
Transformers": talking-heads self-attention layers with LayerScale, then class-attention layers that update the class
token alone), untrained, in eval mode, seed 0, at tiny sizes: two 3 x 32 x 32 images in patches of 8 (16 patches; the
class token joins only in the class-attention layers); width 32, 4 heads of 8, 2 self-attention layers and 2
class-attention layers (upstream's default `depth_token_only=2`), MLPs of 64, LayerScale initialised at 0.1 (the paper's
value for depths up to 18; upstream's default is 1e-4); 10 classes. einops is our stand-in (tests/stubs); the stub
CaiT/attn_talling_head.py is ours (upstream's package imports that misspelt name)."""
import torch

from CaiT.cait import CaiT

torch.manual_seed(0)
model = CaiT(img_size=32, patch_size=8, in_channels=3, num_classes=10, embed_dim=32, depth=2, num_heads=4,
             mlp_ratio=2, mlp_ratio_cls=2, init_scale=0.1).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape))
