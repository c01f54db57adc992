"""Ours: one forward pass of microsoft/CvT's Convolutional vision Transformer (`lib/models/cls_cvt.py`) with one stage
(upstream's `NUM_STAGES`), untrained, in eval mode, seed 0, at tiny sizes: two 3 x 16 x 16 images through the
convolutional token embedding (7 x 7 convolution of stride 4, padding 2, and a LayerNorm: a 4 x 4 grid, 16 tokens),
a class token (CvT-13's last stage has one), no position table, width 32 in 1 head (CvT-13's first stage: 1 head of 64;
upstream scales the scores by the stage's width, which is the head size with one head), 2 blocks whose q, k and v are
depthwise 3 x 3 convolutions with BatchNorm over the token grid (keys and values with stride 2: a 2 x 2 grid, 5
keys with the class token) before their Linears, MLP ratio 2 with upstream's QuickGELU (as its `get_cls_model` builds
it), the class token's LayerNorm, 10 classes.

`torch._six` (upstream imports `container_abcs` from it) left PyTorch in 2.0: the same module, `collections.abc`, is
put in its place before the import."""
import collections.abc
import sys
import types
from functools import partial

import torch

sys.modules["torch._six"] = types.SimpleNamespace(container_abcs=collections.abc)

from cvt.cls_cvt import ConvolutionalVisionTransformer, LayerNorm, QuickGELU  # noqa: E402

spec = {"NUM_STAGES": 1, "PATCH_SIZE": [7], "PATCH_STRIDE": [4], "PATCH_PADDING": [2], "DIM_EMBED": [32],
        "DEPTH": [2], "NUM_HEADS": [1], "MLP_RATIO": [2.0], "QKV_BIAS": [True], "DROP_RATE": [0.0],
        "ATTN_DROP_RATE": [0.0], "DROP_PATH_RATE": [0.0], "CLS_TOKEN": [True], "QKV_PROJ_METHOD": ["dw_bn"],
        "KERNEL_QKV": [3], "PADDING_Q": [1], "PADDING_KV": [1], "STRIDE_KV": [2], "STRIDE_Q": [1]}
torch.manual_seed(0)
model = ConvolutionalVisionTransformer(in_chans=3, num_classes=10, act_layer=QuickGELU,
                                       norm_layer=partial(LayerNorm, eps=1e-5), spec=spec).eval()
img = torch.randn(2, 3, 16, 16)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape))
