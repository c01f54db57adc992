"""Driver (ours, not upstream): OliverPerrin/LexiMind's from-scratch encoder–decoder (src/models/: `TransformerEncoder`
and `TransformerDecoder` in their T5 form, `use_relative_position_bias=True` — no position embedding, a learned
T5 relative-position bias (32 buckets, bidirectional in the encoder, causal buckets in the decoder's self-attention,
none in the cross-attention) added to the scores, **the scores not divided by √hs** (T5's form: `scale_scores=False`),
T5LayerNorm (an RMSNorm without bias), pre-norm sums, a gated-GELU feed-forward, boolean masks (True = attend) filled
with -1e4, the target mask the causal rule combined with the target's padding, final norms, an untied logits layer)
at a tiny size (width 32, 4 heads of 8, 2 layers each, feed-forward 64, vocabularies of 40 and 48), weights as
upstream initialises them (seed 0) with the T5LayerNorm gains set to 1 + N(0, 0.1²) so that a gain left out shows,
eval mode, two source sentences of 7 token IDs (the second padded with 2 pad IDs, 0), two target prefixes of 6 IDs
starting with the start ID (0, which upstream's decoder keeps visible), one forward pass through the encoder and the
decoder with `collect_attn=True` (upstream's option that returns the attention maps: it runs the attention written
out — scores, bias, mask, softmax — instead of `F.scaled_dot_product_attention`).
Stub (ours): models/__init__.py (upstream's imports the task heads and the multi-task wrapper).
Trace: python -m transformer_trace trace driver.py"""
import torch

from models.decoder import TransformerDecoder
from models.encoder import TransformerEncoder

torch.manual_seed(0)
encoder = TransformerEncoder(vocab_size=40, d_model=32, num_layers=2, num_heads=4, d_ff=64, dropout=0.1, max_len=16,
                             pad_token_id=0, use_relative_position_bias=True).eval()
decoder = TransformerDecoder(vocab_size=48, d_model=32, num_layers=2, num_heads=4, d_ff=64, dropout=0.1, max_len=16,
                             pad_token_id=0, use_relative_position_bias=True).eval()
with torch.no_grad():
    for name, parameter in list(encoder.named_parameters()) + list(decoder.named_parameters()):
        if "norm" in name:
            parameter.copy_(1.0 + 0.1 * torch.randn_like(parameter))

src = torch.tensor([[5, 17, 9, 22, 3, 28, 11], [2, 33, 20, 14, 6, 0, 0]])  # Snapshot #1
tgt = torch.tensor([[0, 7, 19, 4, 30, 12], [0, 25, 8, 41, 16, 3]])  # Snapshot #2
emb_weight_slice = encoder.embedding.weight[:5, :5]  # Snapshot #3
with torch.no_grad():
    memory, encoder_attention = encoder(src, collect_attn=True)
    logits, decoder_attention = decoder(tgt, memory, memory_mask=src != 0, collect_attn=True)
logits_slice = logits[0, 0, :10]  # Snapshot #43
print("logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist())
