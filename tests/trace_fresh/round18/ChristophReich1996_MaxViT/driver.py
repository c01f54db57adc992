"""Ours: one forward pass of ChristophReich1996/MaxViT's `MaxViT` (`maxvit/maxvit.py`), untrained, in eval mode, seed
0, at tiny sizes: two 3 x 32 x 32 images; the convolutional stem (stride 2) gives a 16 x 16 map of width 8; one stage
of two MaxViT blocks of width 16 (the first downscales to 8 x 8), each an MBConv, a block-attention transformer (4
windows of 4 x 4 tokens) and a grid-attention transformer (4 grids of 4 x 4 tokens, each a token every 2 pixels);
4 heads of 4 (so upstream's scale num_heads ** -0.5 equals head_dim ** -0.5 here: see SOURCE.md); an MLP of 64;
global average pooling and a head of 10 classes. Our timm/ stands in for the five timm names upstream imports."""
import torch

from maxvit import MaxViT

torch.manual_seed(0)
model = MaxViT(in_channels=3, depths=(2,), channels=(16,), num_classes=10, embed_dim=8, num_heads=4,
               grid_window_size=(4, 4)).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape))
