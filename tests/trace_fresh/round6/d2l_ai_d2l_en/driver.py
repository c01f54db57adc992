"""Ours: one forward pass of the ViT of "Dive into Deep Learning" (section 11.8, PyTorch tab) at a tiny size,
untrained. d2l's own MultiHeadAttention (d2l/torch.py) does the attention."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "stubs"))

import torch  # noqa: E402

from vit import ViT  # noqa: E402

torch.manual_seed(0)
img_size, patch_size = 32, 8
num_hiddens, mlp_num_hiddens, num_heads, num_blks = 32, 64, 4, 2
emb_dropout, blk_dropout, lr = 0.1, 0.1, 0.1
model = ViT(img_size, patch_size, num_hiddens, mlp_num_hiddens, num_heads,
            num_blks, emb_dropout, blk_dropout, lr)
model.eval()
img = torch.randn(2, 3, img_size, img_size)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
probs = logits.softmax(dim=-1)  # BREAKPOINT S26
print(logits.shape, probs.argmax(dim=-1).tolist())
