"""Ours: one forward pass of whai362/PVT's PVTv2 (`classification/pvt_v2.py`, a Pyramid Vision Transformer v2) cut to
its first stage (`num_stages=1`, upstream's own parameter), untrained, in eval mode, seed 0, at tiny sizes: two
3 x 16 x 16 images through the overlapping patch embedding (7 x 7 convolution of stride 4, padding 3, then a
LayerNorm: a 4 x 4 grid, 16 tokens, no class token, no position table), width 32 in 2 heads of 16, 2 blocks whose
attention reads its keys and values from a 2 x 2 reduced grid (spatial reduction ratio 2: a 2 x 2 convolution of stride
2 and a LayerNorm), MLP ratio 2 with a depthwise 3 x 3 convolution between its two Linears, the stage's LayerNorm, the
tokens averaged, 10 classes. The head is sized from embed_dims[3], so all four widths are 32."""
import torch

from pvt_v2 import PyramidVisionTransformerV2

torch.manual_seed(0)
model = PyramidVisionTransformerV2(img_size=16, in_chans=3, num_classes=10, embed_dims=[32, 32, 32, 32],
                                   num_heads=[2, 2, 2, 2], mlp_ratios=[2, 2, 2, 2], qkv_bias=True,
                                   depths=[2, 2, 2, 2], sr_ratios=[2, 2, 2, 2], num_stages=1).eval()
img = torch.randn(2, 3, 16, 16)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape))
