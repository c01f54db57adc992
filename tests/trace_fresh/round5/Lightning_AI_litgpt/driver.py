"""Driver (ours, not upstream): Lightning-AI/litgpt's GPT (litgpt/model.py, litgpt/config.py) with the config of its
smallest GPT-NeoX model, "pythia-14m" (LayerNorm, parallel residual, rotary embeddings on a quarter of each head, a
fused q/k/v Linear, F.scaled_dot_product_attention, GELU MLP), shrunk to a tiny size (width 32, 4 heads, 2 layers,
context 16, a vocabulary of 64), random weights (seed 0), a batch of two prompts of 8 token IDs, one forward pass in
eval mode without gradients, as litgpt's generate does for its prompt (no KV cache).
Trace: python -m transformer_trace trace driver.py"""
import torch

from litgpt.config import Config
from litgpt.model import GPT

torch.manual_seed(0)
config = Config.from_name("pythia-14m", block_size=16, n_layer=2, n_embd=32, n_head=4, vocab_size=64,
                          padding_multiple=64)
model = GPT(config).eval()
idx = torch.tensor([[3, 17, 9, 42, 5, 28, 11, 4], [8, 1, 33, 20, 14, 6, 49, 2]])  # BREAKPOINT G01
with torch.no_grad():
    logits = model(idx)
print("logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist())
