"""Driver (ours, not upstream): gpt-fast's Llama-style Transformer at a tiny size (dim 32, 2 layers, 4 heads, SwiGLU
width 64, a 256-token vocabulary, block size 16), random weights (seed 0), the key/value caches set up for a batch of
two prompts of 8 tokens (8 = the cache length upstream rounds to), one forward pass of the whole prompts in eval mode,
as upstream's `prefill` runs it. Trace: python -m transformer_trace trace driver.py"""
import torch

from model import ModelArgs, Transformer

torch.manual_seed(0)
config = ModelArgs(block_size=16, vocab_size=256, n_layer=2, n_head=4, dim=32, intermediate_size=64)
model = Transformer(config).eval()
idx = torch.tensor([list(b"Hello, w"), list(b"the cat ")])  # BREAKPOINT G01
input_pos = torch.arange(idx.shape[1])
with torch.no_grad():
    model.setup_caches(max_batch_size=2, max_seq_length=idx.shape[1])
    logits = model(idx, input_pos)
    probs = logits.softmax(-1)  # BREAKPOINT G27
    next_probs = probs[0, -1]  # BREAKPOINT G28
print("next bytes", probs[:, -1].argmax(-1).tolist())
