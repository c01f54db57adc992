"""Ours: one forward pass of François Fleuret's `MyGPT` (picoclvr's `mygpt.py`, from morgangiraud/ffleuret_picoclvr):
every module takes and returns a `BracketedSequence` (the tensor and the bracket of positions to compute), a
`CacheWrapper` keeps each module's output in a cache, `WithResidual` adds the stream to its sublayer's output; the input
is shifted right by one inside the model (`F.pad(x, (1, -1))`: token 0 first, the logits at t predict token t); a
sinusoid table with len_max 1e5 (`sin(t / len_max^((j - j%2)/D) + pi/2 * (j%2))`); `QKVAttention` projects with raw
per-head parameters (h, d, C) in `einsum`s, writes K and V into caches in place, scales by 1/sqrt(dim_keys) and masks
with a boolean mask (True = masked) filled with -inf; the heads merged by the context einsum and `flatten(2)`, the
output projection a raw (h*dv, C) matrix; pre-norm blocks, a ReLU MLP, no final LayerNorm, an untied Linear readout.
Untrained, eval mode, seed 0. Tiny sizes, upstream's "4M" shape shrunk: vocabulary 48, width 32, 4 heads, **dim_keys 4
(q and k heads of 4) while the values have C / h = 8**, an MLP of 64, 2 blocks, causal; two sequences of 8 tokens.
Trace: python -m transformer_trace trace driver.py"""
import torch

from mygpt import BracketedSequence, MyGPT

torch.manual_seed(0)
model = MyGPT(vocabulary_size=48, dim_model=32, dim_keys=4, dim_hidden=64, nb_heads=4, nb_blocks=2, causal=True,
              dropout=0.1).eval()
ids = torch.randint(0, 48, (2, 8))  # BREAKPOINT G01
with torch.no_grad():
    logits = model(BracketedSequence(ids)).x  # BREAKPOINT G26
print("logits", tuple(logits.shape), [round(v, 5) for v in logits[0, -1, :4].tolist()])
