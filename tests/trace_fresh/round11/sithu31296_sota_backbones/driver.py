"""Ours: one forward pass of the repository's CaiT (models/cait.py, its layers in models/layers.py) at a tiny size,
untrained, in eval mode. The model asserts a 384 x 384 image and reads its sizes from the `cait_settings` table, so
a tiny entry of ours is added to that table: patch 96 (a 4 x 4 grid), 2 self-attention blocks, width 32, 4 heads,
LayerScale initialised to 0.1 (the paper's value for depth <= 18)."""
import torch

from models.cait import CaiT, cait_settings

torch.manual_seed(0)
cait_settings["tiny"] = [96, 2, 32, 4, 0.1]
model = CaiT("tiny", num_classes=10, image_size=384).eval()
img = torch.randn(2, 3, 384, 384)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
probs = logits.softmax(dim=-1)  # BREAKPOINT S26
print(logits.shape, probs.argmax(dim=-1).tolist())
