"""Driver (ours): seed 002's ViT_AttentionAPI_Residual_LayerNorm (nn.MultiheadAttention with 4 heads, called with
its defaults: it returns the attention weights AVERAGED over the heads, (B, N, N)) at a tiny size (32×32 images, 8×8
patches, embed 32), random weights, a batch of two random images, one forward pass in eval mode.
Trace: python -m transformer_trace trace trace_driver.py"""
import torch

from attention_api_vit import ViT_AttentionAPI_Residual_LayerNorm

torch.manual_seed(0)
model = ViT_AttentionAPI_Residual_LayerNorm(img_size=32, patch_size=8, embed_dim=32, num_classes=10, num_heads=4).eval()
img = torch.randn(2, 3, 32, 32)  # BREAKPOINT S01
with torch.no_grad():
    logits = model(img)
    probs = logits.softmax(-1)  # BREAKPOINT S26
print("predicted", probs.argmax(-1).tolist())
