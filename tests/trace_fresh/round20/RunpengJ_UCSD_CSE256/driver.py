"""Driver (ours, not upstream): RunpengJ/UCSD_CSE256's PA2 (UCSD CSE 256, fall 2024) part 3 decoder with local
attention, `DecoderPart3Local`: token embedding and learned position embedding modules (each with dropout), pre-norm
blocks `DecoderBlockPart3` whose attention is `MultiHeadLocalAttention` (one fused `c_attn` split q, k, v; scores
* 1/sqrt(hs); a sliding-window band `ones(T, T).triu(-16).tril(0)` filled with -inf, then the causal mask the decoder's
`forward` builds, `~triu(ones, 1)`, True = allowed), a GELU FFN of width 100, a final LayerNorm and an untied head.

Tiny sizes: vocabulary 50, width 32, 4 heads of 8, 2 layers, block size 24; seed 0, eval mode, one forward pass
without gradients on 2 sequences of 20 tokens (longer than the window of 16, so the band masks the oldest keys).
Trace: python -m transformer_trace trace driver.py"""
import torch

from transformer import DecoderPart3Local

torch.manual_seed(0)
model = DecoderPart3Local(vocab_size=50, n_embed=32, n_head=4, n_layer=2, block_size=24)
model.eval()
ids = torch.randint(0, 50, (2, 20))  # BREAKPOINT G01
with torch.no_grad():
    logits, attn_maps = model(ids)
print("logits", tuple(logits.shape), round(float(logits.sum()), 6))
