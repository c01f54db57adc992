"""Driver (ours, not upstream): torchvision's VisionTransformer (its attention is nn.MultiheadAttention, called with
need_weights=False: no scores or probabilities exist to capture) at a tiny size (32×32 images, 8×8 patches, hidden 32,
2 layers, 4 heads), random weights, a batch of two random images, one forward pass in eval mode.
Trace: python -m transformer_trace trace trace_driver.py"""
import torch

from tv.models.vision_transformer import VisionTransformer

torch.manual_seed(0)
model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=32, mlp_dim=64,
                          num_classes=10).eval()
torch.nn.init.normal_(model.heads.head.weight, std=0.02)  # torchvision zeroes the head: logits would all be 0
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
    probs = logits.softmax(-1)  # BREAKPOINT S26
print("predicted", probs.argmax(-1).tolist())
