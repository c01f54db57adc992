"""Driver (ours, not upstream): tintn's ViT with ONE attention head (its AttentionHead has no heads axis: q, k, v are
(B, N, hs), the scores (B, N, N)) at a tiny size (32×32 images, 8×8 patches, hidden 32, 2 layers), random weights, a
batch of two random images, one forward pass in eval mode. Trace: python -m transformer_trace trace trace_driver.py"""
import torch

from vit import ViTForClassfication

torch.manual_seed(0)
config = {"patch_size": 8, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 1, "intermediate_size": 64,
          "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0, "initializer_range": 0.02, "image_size": 32,
          "num_classes": 10, "num_channels": 3, "qkv_bias": True, "use_faster_attention": False}
model = ViTForClassfication(config).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits, _ = model(img)  # BREAKPOINT S25 logits
    probs = logits.softmax(-1)  # BREAKPOINT S26
print("predicted", probs.argmax(-1).tolist())
