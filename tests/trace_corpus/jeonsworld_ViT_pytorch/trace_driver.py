"""Driver (ours, not upstream): jeonsworld's ViT-B/16 config shrunk to a tiny size (32×32 images cut into 2×2 patches
of 16×16 pixels, hidden 32, 2 layers, 4 heads of 8, MLP 64, the class token), random weights, a batch of two random
images, one forward pass in eval mode. Upstream creates the class token and the position embeddings as zeros (they are
meant to be loaded from a checkpoint): the driver draws them at random, like the other weights, so that steps which add
them are checked with non-zero values. Trace: python -m transformer_trace trace trace_driver.py"""
import torch

import models.configs as configs
from models.modeling import VisionTransformer

config = configs.get_b16_config()
config.hidden_size = 32
config.transformer.mlp_dim = 64
config.transformer.num_heads = 4
config.transformer.num_layers = 2
torch.manual_seed(0)
model = VisionTransformer(config, img_size=32, num_classes=10).eval()
with torch.no_grad():
    model.transformer.embeddings.cls_token.normal_(std=0.02)
    model.transformer.embeddings.position_embeddings.normal_(std=0.02)
images = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits, _ = model(images)  # BREAKPOINT S25
print("predicted", logits.argmax(-1).tolist())
