"""Ours: one forward pass of fudonglin/transformer's encoder-decoder `Transformer` (`models_transformer.py`), a
student's "Transformers from Scratch" written beside a blog post: one `MultiHeadAttention` class for the encoder's
self-attention, the decoder's masked self-attention and the cross-attention (q, k and v each projected, viewed and
transposed on one line; scores / sqrt(d_k); a 0/1 lower-triangular float mask, `masked_fill(mask == 0, -1e9)`; heads
merged by transpose and view; an output Linear), post-norm layers written on one line per sublayer
(`self.norm1(x + self.attn(x, x, x, mask))`), a ReLU FFN, the paper's sinusoid table added to an unscaled lookup of one
`nn.Embedding` shared by the source and the target, no final LayerNorm, a Linear to the vocabulary. Untrained, eval
mode, seed 0 (upstream has no dropout). Tiny sizes: one vocabulary of 48, width 32, 4 heads of 8, FFN 64, 2 layers each;
2 source sentences of 7 tokens and 2 target inputs of 6, no padding (upstream's forward passes no source mask).
Trace: python -m transformer_trace trace driver.py"""
import torch

from models_transformer import Transformer

torch.manual_seed(0)
model = Transformer(vocab_size=48, d_model=32, num_heads=4, num_layers=2, d_ff=64).eval()
src = torch.randint(0, 48, (2, 7))  # Snapshot #1
tgt = torch.randint(0, 48, (2, 6))  # Snapshot #2
with torch.no_grad():
    logits = model(src, tgt)
print("logits", tuple(logits.shape), [round(v, 5) for v in logits[0, -1, :4].tolist()])
