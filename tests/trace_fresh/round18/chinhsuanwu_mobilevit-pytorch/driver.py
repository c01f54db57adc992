"""Ours: one forward pass of chinhsuanwu/mobilevit-pytorch's `MobileViT` (`mobilevit.py`), untrained, in eval mode,
seed 0, at tiny sizes: two 3 x 128 x 128 images; upstream's fixed layout (a stride-2 convolution, seven MobileNetV2
blocks, three MobileViT blocks of 2, 4 and 3 transformer layers, a 1 x 1 convolution, average pooling, a Linear) with
channels 8-32 and transformer widths 16, 20 and 24 (upstream's own widths grow the same way); each MobileViT block
unfolds its map into 2 x 2 patches, tokens (B, P = 4 pixel positions, N patches, d): 64 patches in the first, 16 in
the second, 4 in the third; 4 heads of 8 (upstream's fixed `Transformer(dim, depth, 4, 8, ...)`, an attention
width of 32); 10 classes. einops is our stand-in (tests/stubs)."""
import torch

from mobilevit import MobileViT

torch.manual_seed(0)
model = MobileViT((128, 128), dims=[16, 20, 24], channels=[8, 8, 12, 12, 16, 16, 16, 16, 16, 16, 32], num_classes=10,
                  expansion=2).eval()
img = torch.randn(2, 3, 128, 128)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape))
