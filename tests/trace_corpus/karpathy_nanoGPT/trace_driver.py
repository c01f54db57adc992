"""Driver (ours, not upstream): nanoGPT at a tiny size (2 layers, 4 heads, n_embd 32, context 16), random weights, a
batch of two 6-byte prompts with targets (so the head runs on every position), one forward pass in eval mode. Attention
runs through F.scaled_dot_product_attention: no scores or probabilities exist to capture.
Trace: python -m transformer_trace trace trace_driver.py"""
import torch

from model import GPT, GPTConfig

torch.manual_seed(0)
model = GPT(GPTConfig(block_size=16, vocab_size=256, n_layer=2, n_head=4, n_embd=32, dropout=0.0, bias=True)).eval()
ids = torch.tensor([list(b"Hello!"), list(b"world.")])  # BREAKPOINT G01
with torch.no_grad():
    logits, loss = model(ids, targets=torch.roll(ids, -1, dims=1))
    probs = logits.softmax(-1)  # BREAKPOINT G27
print("loss", float(loss))
