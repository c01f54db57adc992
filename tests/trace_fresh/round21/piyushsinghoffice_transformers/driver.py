"""Driver (ours, not upstream): piyushsinghoffice/transformers' encoder-decoder `Transformer` (`src/model.py`,
`src/layers.py`), a from-scratch "Attention Is All You Need" written as a tutorial project: post-norm layers written on
one line each (`x = self.norm1(x + self.drop(self.self_attn(x, x, x, mask)))`), one `MultiHeadAttention` class for the
encoder's self-attention, the decoder's masked self-attention and the cross-attention (q/k/v projected and split on one
line each, scores / sqrt(d_k), boolean masks True = masked filled with -inf), a sinusoid table added in a module with
its own dropout, a ReLU FFN in an `nn.Sequential`, no final LayerNorms; the masks made by the model itself from pad
ID 0 (`(B, 1, 1, S)` padding, `tgt_pad | triu(ones, 1)`, the source padding expanded to `(B, 1, T, S)`).
Built as upstream's examples/toy_train.py builds it, with `tie_embeddings=True`: one `nn.Embedding` shared by the
encoder and the decoder, the generator tied to it.

Tiny sizes: one vocabulary of 48, width 32, 4 heads of 8, FFN 64, 2 layers each; seed 0, eval mode, one forward pass
without gradients on 2 source sentences of 7 tokens and 2 target inputs of 6, the second of each padded (ID 0) at the
end.
Trace: python -m transformer_trace trace driver.py"""
import torch

from src.model import Transformer

torch.manual_seed(0)
model = Transformer(src_vocab_size=48, tgt_vocab_size=48, d_model=32, num_layers=2, num_heads=4, d_ff=64,
                    dropout=0.1, max_len=64, tie_embeddings=True)
model.eval()
src = torch.randint(3, 48, (2, 7))
src[1, 5:] = 0  # Snapshot #1
tgt_inp = torch.randint(3, 48, (2, 6))
tgt_inp[1, 4:] = 0  # Snapshot #2
with torch.no_grad():
    logits = model(src, tgt_inp, src_pad_id=0, tgt_pad_id=0)
print("logits", tuple(logits.shape), round(float(logits.sum()), 6))
