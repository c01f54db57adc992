"""Ours: one forward pass of godofpdog/ViT_PyTorch's `ViT` (`vit_pytorch/modules.py`: a Conv2d patch embedding, the
class token concatenated in the model, the positions added by a `PositionalEmbedding` module at the start of the
encoder, pre-norm blocks, a fused `qkv_proj` reshaped (b, l, 3, h, hs) and permuted (2, 0, 3, 1, 4), the scale after
the product, the context merged on the product's line, an MLP `nn.Sequential` with its own tanh-approximation `GELU`
module, a final LayerNorm, then a pre-logits layer, Linear + Tanh, applied to every token before row 0 is pooled, and a
Linear head), untrained, in eval mode, seed 0. Tiny sizes: two 3 x 32 x 32 images, patches of 8 (16 patches, 17
tokens), width 32, 4 heads of 8, 2 blocks, an MLP of 64, a pre-logits width of 32 (upstream's `repr_dim`), 10 classes.

Upstream initialises the class token and the position table to zeros (a checkpoint fills them); ours draws both from
N(0, 0.02^2), as a trained model would have them non-zero, so that the positions are seen at all."""
import torch

from vit_pytorch.modules import ViT

torch.manual_seed(0)
model = ViT(image_size=32, patch_size=8, in_channels=3, num_classes=10, embed_dim=32, num_layers=2, num_heads=4,
            hidden_dim=64, atten_drop=0.0, proj_drop=0.1, repr_dim=32).eval()
with torch.no_grad():
    torch.nn.init.normal_(model.cls_token, std=0.02)
    torch.nn.init.normal_(model.transformer.pos_embedding.embedding, std=0.02)
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape), [round(v, 5) for v in logits[0, :4].tolist()])
