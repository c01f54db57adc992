"""Driver (ours, not upstream): hila-chefer/Transformer-Explainability's ViT with its own layer classes
(`baselines/ViT/ViT_LRP.py` on `modules/layers_ours.py`: Linear, LayerNorm, Conv2d, Softmax subclasses with
relevance propagation, an `einsum` module, `Add`, `Clone` and `IndexSelect` modules) at a tiny size (32x32 images,
8x8 patches, width 32, 2 blocks, 4 heads, qkv bias, 10 classes), a seed, random weights, the class token and the
positions drawn as a trained checkpoint would have them (upstream draws both with std 0.02), a batch of two random
images, one forward pass in eval mode WITH gradients (the model registers gradient hooks on its tensors, as upstream's
explanation generator runs it); the softmax over the 10 logits is ours. The einops package is replaced by our
stand-in (`einops/`). Trace: python -m transformer_trace trace driver.py"""
import torch

from baselines.ViT.ViT_LRP import VisionTransformer

torch.manual_seed(0)
model = VisionTransformer(img_size=32, patch_size=8, num_classes=10, embed_dim=32, depth=2, num_heads=4,
                          mlp_ratio=4, qkv_bias=True).eval()
with torch.no_grad():
    torch.nn.init.normal_(model.cls_token, std=0.5)
    torch.nn.init.normal_(model.pos_embed, std=0.5)
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
logits = model(img)
probs = logits.softmax(-1)  # BREAKPOINT S26
print("predicted", probs.argmax(-1).tolist())
