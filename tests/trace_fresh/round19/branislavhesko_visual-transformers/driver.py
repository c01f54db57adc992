"""Ours: one forward pass of branislavhesko/visual-transformers' `XCIT` (`modeling/xcit.py`, an XCiT written from the
paper: cross-covariance attention, local patch interaction, class-attention layers), untrained, in eval mode, seed 0,
at tiny sizes: two 3 x 32 x 32 images; upstream's convolutional patch embedding for a patch of 8 (three 3 x 3
convolutions of stride 2 without padding: 32 -> 15 -> 7 -> 3, so a 3 x 3 map, 9 patches); width 32, 4 heads of 8, 2
XCiT layers, 2 class-attention layers, upstream's MLP of 4 x 32; Fourier positions on; 10 classes. einops is our
stand-in (tests/stubs)."""
import torch

from modeling.xcit import XCIT

torch.manual_seed(0)
model = XCIT(num_classes=10, num_class_attention_layers=2, num_xcit_layers=2, patch_size=8, embed_size=32,
             num_heads=4).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape))
