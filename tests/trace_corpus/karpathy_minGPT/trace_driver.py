"""Driver (ours, not upstream): minGPT at a tiny size (2 layers, 4 heads, n_embd 32, context 16 > T), random weights,
a batch of two 6-byte prompts, one forward pass in eval mode. Trace: python -m transformer_trace trace trace_driver.py"""
import torch

from mingpt.model import GPT

torch.manual_seed(0)
config = GPT.get_default_config()
config.model_type = None
config.n_layer, config.n_head, config.n_embd = 2, 4, 32
config.vocab_size, config.block_size = 256, 16
model = GPT(config).eval()
ids = torch.tensor([list(b"Hello!"), list(b"world.")])  # BREAKPOINT G01
with torch.no_grad():
    logits, _ = model(ids)
    probs = logits.softmax(-1)  # BREAKPOINT G27
print("next bytes", probs[:, -1].argmax(-1).tolist())
