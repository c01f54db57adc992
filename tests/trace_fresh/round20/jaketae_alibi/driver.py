"""Driver (ours, not upstream): jaketae/alibi's `ALiBiTransformer`, a decoder stack with ALiBi (no position
embeddings: each head's scores get slope * (j - i) added before the causal mask; slopes 1/256^((i+1)/h)), one fused
bias-free Linear split key, query, value in that order, the keys kept (B, h, hs, T) by `permute(0, 2, 3, 1)`, scores
divided by sqrt(d_model), no output projection, pre-norm blocks with a GELU FFN.

Upstream's model takes embeddings and returns hidden states, so the token embedding, the final LayerNorm and the
language-model head are ours (as its README's example feeds it random embeddings). Tiny sizes: vocabulary 50, width
32, 4 heads of 8, 2 layers, 16 positions, FFN expansion 4; seed 0, eval mode, one forward pass on 2 sequences of 8.
Trace: python -m transformer_trace trace driver.py"""
import torch
from torch import nn

from alibi import ALiBiConfig, ALiBiTransformer

torch.manual_seed(0)
config = ALiBiConfig(num_layers=2, d_model=32, num_heads=4, max_len=16, dropout=0.1, causal=True,
                     expansion_factor=4)
model = ALiBiTransformer(config)
embed = nn.Embedding(50, 32)
ln_f = nn.LayerNorm(32)
head = nn.Linear(32, 50, bias=False)
model.eval()
ids = torch.randint(0, 50, (2, 8))  # BREAKPOINT G01
with torch.no_grad():
    tok = embed(ids)  # BREAKPOINT G02
    x = model(tok)
    x = ln_f(x)  # BREAKPOINT G25
    logits = head(x)  # BREAKPOINT G26
print("logits", tuple(logits.shape), round(float(logits.sum()), 6))
