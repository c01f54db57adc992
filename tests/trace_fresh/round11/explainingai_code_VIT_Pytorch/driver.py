"""Ours: one forward pass of the repository's ViT (model/transformer.py, its parts in model/) at a tiny size, untrained,
in eval mode. The configuration keeps the repository's own form (config/default.yaml): an attention width
n_heads x head_dim that is not the model width (there 8 x 64 = 512 against emb_dim 128; here 4 x 16 = 64 against 32)."""
import torch

from model.transformer import VIT

torch.manual_seed(0)
config = {"n_heads": 4, "head_dim": 16, "emb_dim": 32, "attn_drop": 0.1, "ff_dim": 64, "ff_drop": 0.1, "n_layers": 2,
          "num_classes": 10, "image_height": 32, "image_width": 32, "patch_height": 8, "patch_width": 8,
          "patch_emb_drop": 0.1, "im_channels": 3}
model = VIT(config).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
probs = logits.softmax(dim=-1)  # BREAKPOINT S26
print(logits.shape, probs.argmax(dim=-1).tolist())
