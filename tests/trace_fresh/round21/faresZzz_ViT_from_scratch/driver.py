"""Ours: one forward pass of faresZzz/ViT_from_scratch's `VisionTransformer` (`src/vit_from_scratch/model.py`, a
study project's pedagogical ViT) configured with `position_embedding="rope2d"`: no position table is added to the
tokens; instead every attention layer rotates its queries and keys with **2-D rotary position embeddings** (the first
half of each head's dimensions rotated by the patch's row, the second half by its column, the class token left
unrotated: `build_rope_cache_2d` and `apply_rope` in `embedding.py`). Untrained, in eval mode, seed 0, at tiny sizes:
two 3 x 32 x 32 images in patches of 8 (a 4 x 4 grid, 16 patches, 17 tokens); width 32, 4 heads of 8 (RoPE-2D needs a
head size divisible by 4), 2 pre-norm blocks, an MLP of 64; 10 classes. The package's `__init__.py` is our stub (see
its docstring)."""
import torch

from vit_from_scratch.config import ViTConfig
from vit_from_scratch.model import VisionTransformer

torch.manual_seed(0)
config = ViTConfig(image_size=32, patch_size=8, in_channels=3, num_classes=10, embed_dim=32, depth=2, num_heads=4,
                   mlp_ratio=2.0, position_embedding="rope2d")
model = VisionTransformer(config).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
print("logits", tuple(logits.shape), [round(v, 5) for v in logits[0, :4].tolist()])
