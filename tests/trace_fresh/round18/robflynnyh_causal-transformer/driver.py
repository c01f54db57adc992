"""Driver (ours, not upstream): robflynnyh/causal-transformer's `transformer_lm` (`transformer.py`), a GPT-style
decoder with **cosine-similarity attention** (queries and keys L2-normalised per head, their dot products times a
learned temperature shared by every layer, 15.5 at initialisation, no 1/√d), a **dynamic position bias** (a small MLP
of the signed query–key distance, one bias per head, added to the scores; no position embeddings), **multi-query
attention** (`shared_kv=True`: one key and one value head for all query heads, `(B, 1, T, hs)`, broadcast), **talking
heads before the softmax** (`talking_heads='pre'`: a 1×1 `Conv2d` over the heads mixing the scores), **token shift**
(`token_shift=True`: before each block half the channels are taken from the previous position), a boolean mask
(True = blocked) filled with −finfo.max, pre-norm blocks through a `PreNorm` wrapper, a GLU MLP (one Linear to 2·M,
`x * SiLU(gate)`), a final LayerNorm and an untied head.

The constructor's options are upstream's own keyword arguments (the README's example sets `shared_kv=True`; the README
lists talking heads, "pre" being the author's setting, and token shift as features). Tiny sizes (width 32, 4 heads of
8, MLP 128, 2 layers, 50 tokens), seed 0, eval mode, one forward pass without gradients on two sequences of 8 tokens.
Trace: python -m transformer_trace trace driver.py"""
import torch

from transformer import transformer_lm

torch.manual_seed(0)
model = transformer_lm(dim=32, vocab_size=50, depth=2, heads=4, dim_head=8, dropout=0.0, causal=True,
                       shared_kv=True, talking_heads="pre", token_shift=True)
model.eval()
ids = torch.randint(0, 50, (2, 8))  # BREAKPOINT G01
with torch.no_grad():
    logits, _, cache = model(ids)
print("logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist(), "sum |logits|", round(float(logits.abs().sum()), 4))
