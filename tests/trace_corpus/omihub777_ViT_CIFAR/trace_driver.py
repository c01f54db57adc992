"""Driver (ours, not upstream): omihub777's ViT for CIFAR at a tiny size (32×32 images cut into 4×4 patches of 8×8
pixels, hidden 32, 2 layers, 4 heads of 8, MLP 64, the class token), random weights, a batch of two random images, one
forward pass in eval mode. vit.py and layers.py import torchsummary for their `__main__` demos only: where it is not
installed an empty stand-in module is registered first. Trace: python -m transformer_trace trace trace_driver.py"""
import importlib.util
import sys
import types

import torch

# (not in sys.modules: a benchmark runs the driver again in one process, its stand-in already there)
if "torchsummary" not in sys.modules and importlib.util.find_spec("torchsummary") is None:
    sys.modules["torchsummary"] = types.ModuleType("torchsummary")

from vit import ViT  # noqa: E402

torch.manual_seed(0)
model = ViT(in_c=3, num_classes=10, img_size=32, patch=4, dropout=0.0, num_layers=2, hidden=32, mlp_hidden=64, head=4,
            is_cls_token=True).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
    probs = logits.softmax(-1)  # BREAKPOINT S26
print("predicted", probs.argmax(-1).tolist())
