"""Ours: one forward pass of Ctrl408/ViT-implementations' VisionTransformer with token merging
(`vision_transformer/vision_transformer/`: `models.py`, `bsm.py`), untrained, in eval mode, seed 0, at tiny sizes: two
3 x 16 x 16 images cut by a 4 x 4 convolution into 16 patches of width 16, a class token, 3 blocks of 2 heads (of 8)
and an MLP of 32; each block merges 2 pairs of tokens after its attention's residual sum (bipartite soft matching on
the keys averaged over the heads: 17, then 15, then 13 tokens, 11 after the last block); a LayerNorm and a head, 10
classes. Upstream leaves the class token and the position table at zero (no initialisation of its own): we draw both
from a normal of std 0.02, as the timm code it follows does, so that the tokens are not all equal at the start."""
import torch

from vision_transformer import VisionTransformer

torch.manual_seed(0)
model = VisionTransformer(img_size=16, patch_size=4, in_chans=3, num_classes=10, embed_dim=16, depth=3, num_heads=2,
                          mlp_ratio=2.).eval()
with torch.no_grad():
    torch.nn.init.normal_(model.cls_token, std=0.02)
    torch.nn.init.normal_(model.pos_embed, std=0.02)
img = torch.randn(2, 3, 16, 16)  # BREAKPOINT S01
with torch.no_grad():
    logits, attention_outputs = model(img)
print("logits", tuple(logits.shape))
