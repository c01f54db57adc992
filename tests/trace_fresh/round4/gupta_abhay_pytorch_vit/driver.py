"""Driver (ours, not upstream): gupta-abhay/pytorch-vit's VisionTransformer (`vit.py`, with `patch_embed.py`,
`transformer.py`, `modules.py`, `utils.py` copied flat beside it, as upstream's flat imports expect) at a tiny size
(32x32 images, 8x8 patches through the linear patch path, width 32, 2 layers, 4 heads, [CLS] head, 10 classes), a
seed, random weights, the class token, the positions and the classifier drawn as a trained checkpoint would have them
(upstream initialises the class token to zeros, the positions to std 0.02 and the classifier to zeros), a batch of two
random images, one forward pass in eval mode; the softmax over the 10 logits is ours.
Trace: python -m transformer_trace trace driver.py"""
import torch

from vit import VisionTransformer

torch.manual_seed(0)
model = VisionTransformer(image_size=32, patch_size=8, in_channels=3, embedding_dim=32, num_layers=2, num_heads=4,
                          use_conv_stem=False, use_linear_patch=True, cls_head=True, num_classes=10).eval()
with torch.no_grad():
    torch.nn.init.normal_(model.embedding_layer.cls_token, std=0.5)
    torch.nn.init.normal_(model.embedding_layer.pos_embed, std=0.5)
    torch.nn.init.normal_(model.cls_layer.net[0].weight, std=0.2)
    torch.nn.init.normal_(model.cls_layer.net[0].bias, std=0.2)
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
    probs = logits.softmax(-1)  # BREAKPOINT S26
print("predicted", probs.argmax(-1).tolist())
