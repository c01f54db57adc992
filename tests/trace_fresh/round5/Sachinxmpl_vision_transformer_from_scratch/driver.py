"""Driver (ours, not upstream): Sachinxmpl/vision_transformer_from_scratch's ViT (`models/*.py`, upstream's package
layout kept: `from models.ViT import ViT`, as its `inference.py` imports it) at a tiny size (32x32 images, 8x8
patches, width 32, 2 layers, 4 heads, MLP ratio 2, 10 classes, dropout 0.1 as upstream trains it), a seed, random
weights, the class token, the positions and the LayerNorm gains drawn as a trained checkpoint would have them
(upstream initialises the class token and the positions to zeros, its own LayerNorm to ones/zeros), a batch of two
random images, one forward pass in eval mode; the softmax over the 10 logits is ours.
Trace: python -m transformer_trace trace driver.py"""
import torch

from models.ViT import ViT

torch.manual_seed(0)
model = ViT(image_size=32, patch_size=8, num_classes=10, emb_dims=32, depth=2, num_heads=4, dropout=0.1,
            mlp_ratio=2).eval()
with torch.no_grad():
    torch.nn.init.normal_(model.embedding.cls_token, std=0.5)
    torch.nn.init.normal_(model.embedding.pos_embeddings, std=0.5)
    for name, parameter in model.named_parameters():
        if name.endswith(".alpha"):
            parameter.copy_(1.0 + 0.1 * torch.randn_like(parameter))
        elif name.endswith(".beta"):
            parameter.copy_(0.1 * torch.randn_like(parameter))
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
    probs = logits.softmax(-1)  # BREAKPOINT S26
print("predicted", probs.argmax(-1).tolist())
