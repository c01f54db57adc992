"""Driver (ours, not upstream): the image encoder of OpenAI's CLIP (`clip/model.py`, `VisionTransformer`) at a tiny
size (32×32 images, 8×8 patches, width 32, 2 layers, 4 heads, output 10), random weights, a batch of two random
images, one forward pass in eval mode; the softmax over the 10 outputs is ours (CLIP's encoder ends at the projection).
Trace: python -m transformer_trace trace driver.py"""
import torch

from clip.model import VisionTransformer

torch.manual_seed(0)
model = VisionTransformer(input_resolution=32, patch_size=8, width=32, layers=2, heads=4, output_dim=10).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
    probs = logits.softmax(-1)  # BREAKPOINT S26
print("predicted", probs.argmax(-1).tolist())
