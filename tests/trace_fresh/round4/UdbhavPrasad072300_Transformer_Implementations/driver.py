"""Driver (ours, not upstream): UdbhavPrasad072300/Transformer-Implementations' `ViT` (`transformer.py`, the
package's single model file, copied beside this driver) at a tiny size (32x32 images, 8x8 patches, width 32, 4 heads,
2 encoder layers, 10 classes), a seed, random weights (upstream draws the class token and the positions N(0, 1)
itself), a batch of two random images, one forward pass in eval mode. The model returns log-probabilities
(`F.log_softmax` of its classifier); their exponential, the probabilities, is ours.
Trace: python -m transformer_trace trace driver.py"""
import torch

from transformer import ViT

torch.manual_seed(0)
model = ViT(image_size=32, channel_size=3, patch_size=8, embed_size=32, num_heads=4, classes=10, num_layers=2,
            hidden_size=64).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    log_probs = model(img)
    probs = log_probs.exp()  # BREAKPOINT S26
print("predicted", probs.argmax(-1).tolist())
