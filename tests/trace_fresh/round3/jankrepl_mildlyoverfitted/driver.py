"""Driver (ours, not upstream): mildlyoverfitted's Vision Transformer from scratch (`custom.py`, `VisionTransformer`)
at a tiny size (32×32 images, 8×8 patches, width 32, 2 blocks, 4 heads, 10 classes), a seed, random weights, the
class token and the positions drawn as a trained checkpoint would have them (upstream initialises both to zeros and
copies timm's weights in `verify.py`), a batch of two random images, one forward pass in eval mode; the softmax over
the 10 logits is ours. Trace: python -m transformer_trace trace driver.py"""
import torch

from custom import VisionTransformer

torch.manual_seed(0)
model = VisionTransformer(img_size=32, patch_size=8, n_classes=10, embed_dim=32, depth=2, n_heads=4).eval()
with torch.no_grad():
    torch.nn.init.normal_(model.cls_token, std=0.5)
    torch.nn.init.normal_(model.pos_embed, std=0.5)
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
    probs = logits.softmax(-1)  # BREAKPOINT S26
print("predicted", probs.argmax(-1).tolist())
