"""Driver (ours, not upstream): Taeksu-Kim/alibi_gqa_transformer's encoder-decoder (alibi_transformer.py: no
position embeddings, ALiBi biases added to the scores — a symmetric -|i-j| * slope bias per head in the encoder and
the cross-attention, a key-only (j - T + 1) * slope bias in the causal self-attention —, grouped-query attention with
separate Wq/Wk/Wv Linears, 4 query heads sharing 2 key/value heads repeated with expand/reshape, einops splits with K
kept transposed as 'b h d s', a boolean causal mask built inside the attention function and filled with finfo.min,
pre-norm layers with the sums written `x = x + b`, a SwiGLU feed-forward (LlamaMLP), final LayerNorms in encoder and
decoder, an untied logits layer) at a tiny size (width 32, 4 query heads of 8, 2 key/value heads, 2 encoder and 2
decoder layers, feed-forward 64, vocabularies of 64, 16 positions), weights drawn from a normal distribution (seed 0),
dropout 0, eval mode, a batch of two source sentences of 7 token IDs and two target sentences of 7 (ALiBi's
cross-attention bias, one square table, slices both lengths alike), one forward pass, no padding masks.
Stubs: einops/ (not installed here), bert_padding.py and flash_attn.py (imported for the flash path, never called).
Trace: python -m transformer_trace trace driver.py"""
from types import SimpleNamespace

import torch

from alibi_transformer import Alibi_Transformer

torch.manual_seed(0)
config = SimpleNamespace(d_model=32, q_n_heads=4, kv_n_heads=2, dropout_rate=0.0, attn_impl="torch",
                         norm_type="layernorm", enc_norm_strategy="pre", dec_norm_strategy="pre", feed_forward_dim=64,
                         enc_vocab_size=64, dec_vocab_size=64, enc_pad_id=0, dec_pad_id=0, alibi_bias_max=8,
                         num_enc_layers=2, num_dec_layers=2, init_device=None, max_seq_len=16, no_bias=False)
model = Alibi_Transformer(config).eval()
with torch.no_grad():
    for name, parameter in model.named_parameters():
        parameter.normal_(0.0, 0.1)
        if "norm" in name and name.endswith("weight"):
            parameter.add_(1.0)

src = torch.tensor([[5, 17, 9, 42, 3, 28, 11], [7, 33, 20, 14, 6, 49, 30]])  # Snapshot #1
tgt = torch.tensor([[1, 12, 40, 8, 25, 19, 2], [1, 44, 3, 27, 16, 9, 2]])  # Snapshot #2
with torch.no_grad():
    logits, _ = model(enc_input_ids=src, dec_input_ids=tgt)
print("logits", tuple(logits.shape), "argmax", logits.argmax(-1)[0].tolist())
