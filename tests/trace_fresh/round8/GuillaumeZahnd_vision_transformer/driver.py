"""Ours: one forward pass of the repository's VisionTransformerModel (source/models/) for classification at a tiny
size, untrained, in eval mode; the Hydra config it reads is given as a namespace with the same fields."""
from types import SimpleNamespace

import torch

from source.models.vision_transformer_model import VisionTransformerModel

torch.manual_seed(0)
cfg = SimpleNamespace(
    model=SimpleNamespace(embedding_dim=32, patch_side_length=8, stride=8, nb_heads=4, nb_layers=2, mlp_expansion=4,
                          task="classification", pretrained=False, layers_for_segmentation=[]),
    dataset=SimpleNamespace(nb_channels=3, image_height=32, image_width=32, nb_classes=10))
model = VisionTransformerModel(cfg).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
probs = logits.softmax(dim=-1)  # BREAKPOINT S26
print(logits.shape, probs.argmax(dim=-1).tolist())
