"""Driver (ours, not upstream): nanowell/Differential-Transformer-PyTorch's `DiffTransformer.py`, a decoder-only
language model with **differential attention** (each head's queries and keys split in two halves, two causal softmax
maps, the second subtracted from the first times a learned λ = exp(λq1·λk1) − exp(λq2·λk2) + λinit, their difference
applied to values of twice the head size, each head's context normalised by its own RMSNorm and scaled by 1 − λinit),
pre-norm blocks with an RMSNorm class of its own, a SwiGLU feed-forward (`W2(silu(WG(x)) * W1(x))`), learned positions
from an `nn.Embedding`, a final RMSNorm and an untied head without bias.

Tiny sizes (width 32, 4 heads of 8 (values 16), 2 layers, 50 tokens, 16 positions), seed 0, eval mode, one forward
pass without gradients on two sequences of 8 tokens (upstream's own example at `__main__` uses BERT's sizes).
Trace: python -m transformer_trace trace driver.py"""
import torch

from DiffTransformer import DiffTransformer

torch.manual_seed(0)
model = DiffTransformer(vocab_size=50, d_model=32, num_heads=4, num_layers=2, max_seq_length=16)
model.eval()
input_ids = torch.randint(0, 50, (2, 8))
with torch.no_grad():
    logits = model(input_ids)
print("logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist())
