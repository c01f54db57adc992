"""Driver (ours, not upstream): DINOv2's Vision Transformer (`dinov2/models/vision_transformer.py`,
`DinoVisionTransformer`, with the blocks `vit_small` builds: `Block` with `MemEffAttention`, which without xFormers
runs `Attention.forward`, i.e. `scaled_dot_product_attention`) at a tiny size (32×32 images, 8×8 patches, width 32,
2 blocks, 4 heads), 4 register tokens, LayerScale, a seed, random weights; the LayerScale gains, the class token,
the registers and the positions drawn as a trained checkpoint would have them (upstream initialises the gains to a
constant and the tokens near zero); a linear head of 10 classes in place of upstream's `nn.Identity` (a linear probe),
two random images, one forward pass in eval mode; the softmax over the 10 logits is ours.
Trace: python -m transformer_trace trace driver.py"""
import os
import warnings
from functools import partial

os.environ.setdefault("XFORMERS_DISABLED", "1")  # no xFormers here: upstream's own fallback (a warning, then plain torch)
warnings.filterwarnings("ignore", message="xFormers")

import torch

from dinov2.layers import MemEffAttention, NestedTensorBlock as Block
from dinov2.models.vision_transformer import DinoVisionTransformer

torch.manual_seed(0)
model = DinoVisionTransformer(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=4, mlp_ratio=4,
                              block_fn=partial(Block, attn_class=MemEffAttention), init_values=1.0,
                              num_register_tokens=4).eval()
model.head = torch.nn.Linear(32, 10)
with torch.no_grad():
    for name, parameter in model.named_parameters():
        if name.endswith("gamma") or name in ("cls_token", "register_tokens", "pos_embed"):
            torch.nn.init.normal_(parameter, mean=0.0 if not name.endswith("gamma") else 0.5, std=0.5)
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
    probs = logits.softmax(-1)  # BREAKPOINT S26
print("predicted", probs.argmax(-1).tolist())
