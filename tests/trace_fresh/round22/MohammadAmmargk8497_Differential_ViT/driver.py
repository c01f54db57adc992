"""Ours: one forward pass of MohammadAmmargk8497/Differential_ViT's `VisionTransformer` (`ViT.py`) with its
`MultiheadDiffAttn` (`DiffAttention.py`, the Differential Transformer's attention adapted to a ViT): q and k split into
2h heads of hs, v into h heads of 2hs, q scaled on its own line, two softmax maps per head subtracted with a learned
lambda (lambda_init = 0.8 - 0.6 exp(-0.3 depth)), the context normalised per head by a sub-LayerNorm (apex's RMSNorm is
absent, so upstream's fallback `torch.nn.LayerNorm` without affine weights) and multiplied by (1 - lambda_init), then
the output projection. Untrained, eval mode, seed 0. Tiny sizes: two 3 x 32 x 32 images, patches of 8 (16 patches, 17
tokens), width 32, 2 heads (so q, k: 4 heads of 8; v: 2 heads of 16), 2 blocks, an MLP of 64, 10 classes. Upstream
initialises the class token at zero (training moves it); ours draws it from N(0, 0.02). `torchinfo` is our stub
(torchinfo.py), imported by ViT.py and used only in its own test."""
import torch

from ViT import VisionTransformer

torch.manual_seed(0)
model = VisionTransformer(image_size=32, patch_size=8, num_classes=10, embed_dim=32, depth=2, num_heads=2, mlp_dim=64,
                          channels=3, dropout=0.1).eval()
with torch.no_grad():
    torch.nn.init.normal_(model.cls_token, std=0.02)
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape), [round(v, 5) for v in logits[0, :4].tolist()])
