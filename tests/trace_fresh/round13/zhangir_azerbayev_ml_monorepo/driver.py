"""Driver (ours, not upstream): zhangir-azerbayev/ml-monorepo's `shakespeare_characters/model.py`, its
`ParallelGPTModel` (a character-level GPT written while following a lecture series, then given **parallel attention and
MLP** blocks with **QK normalisation**: one LayerNorm (no gain, no shift) feeding one fused Linear that makes q, k, v
and the MLP's hidden layer at once, split by `torch.split`; a LayerNorm over each head's queries and keys; no attention
output projection; the block's output `outs + mlp_out + inputs` on one line; learned positions; a final LayerNorm
without affine parameters and an untied head) at a tiny size (width 32, 4 heads of 8, 2 blocks, a vocabulary of 64,
16 positions), upstream's initialisation (PyTorch's defaults; seed 0 after upstream's own `manual_seed(1337)` at
import), eval mode, a batch of two prompts of 8 token IDs, one forward pass without targets.
Trace: python -m transformer_trace trace driver.py"""
import torch

from model import ParallelGPTModel

torch.manual_seed(0)
model = ParallelGPTModel(context_length=16, d_model=32, num_heads=4, n_layers=2, vocab_size=64).eval()

tokens = torch.tensor([[5, 17, 9, 42, 3, 28, 11, 4], [2, 33, 20, 14, 6, 49, 5, 30]])  # BREAKPOINT G01
with torch.no_grad():
    logits, _ = model(tokens)
print("logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist())
