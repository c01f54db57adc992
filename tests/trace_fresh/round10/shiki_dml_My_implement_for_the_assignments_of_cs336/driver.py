"""Driver (ours, not upstream): a student's solution to Stanford CS336 (Spring 2025) assignment 1, "Transformer LM
from scratch" (shiki-dml/My-implement-for-the-assignments-of-cs336, assignment1/cs336_basics/: `TransfromerLM` with
its own `Embedding` (a raw weight indexed by the IDs), `Linear` (`einops.einsum` on a raw (out, in) weight, no bias),
`RMSnorm`, rotary embeddings over whole heads with the pairs interleaved (`repeat_interleave`, `rotate_half` by
`rearrange`), a causal mask of booleans (True = allowed) filled with -inf where False, its own softmax function, scores
and context by `einops.einsum`, pre-norm residual sums each written with its sublayer call on one line, a SwiGLU
computed from the raw `W1`/`W3`/`W2` weights in one expression, no position embedding) at a tiny size (width 32, 4 heads
of 8, 2 layers, SwiGLU 64, a vocabulary of 64, 16 positions, theta 10000), weights as upstream initialises them (seed
0; truncated normals) with the RMSnorm gains set to 1 + N(0, 0.1²) so that a gain left out shows, eval mode, a batch
of two prompts of 8 token IDs, one forward pass.
Stubs (ours): einops/ (not installed here), cs336_basics/__init__.py (upstream's reads the installed package's
version, which raises unless the folder is pip-installed).
Trace: python -m transformer_trace trace driver.py"""
import torch

from cs336_basics.Transformer_LM import TransfromerLM

torch.manual_seed(0)
model = TransfromerLM(vocab_size=64, context_length=16, num_layers=2, d_model=32, num_heads=4, d_ff=64,
                      theta=10000.0).eval()
with torch.no_grad():
    for name, parameter in model.named_parameters():
        if "RMS" in name or name.startswith("norm"):
            parameter.copy_(1.0 + 0.1 * torch.randn_like(parameter))

tokens = torch.tensor([[5, 17, 9, 42, 3, 28, 11, 4], [2, 33, 20, 14, 6, 49, 5, 30]])  # BREAKPOINT G01
with torch.no_grad():
    logits = model(tokens)
print("logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist())
