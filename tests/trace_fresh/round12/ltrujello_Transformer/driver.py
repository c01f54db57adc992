"""Driver (ours, not upstream): ltrujello/Transformer's `src/transformer/` (the code of Luke Trujillo's blog post
"Transformer From Scratch In PyTorch": a pre-LayerNorm encoder–decoder for translation — its own LayerNorm class
(`gamma * (x - mean) / (std + eps) + beta`, the unbiased standard deviation), no bias in the q/k/v/output projections,
one `attention()` function for the three uses, the scores masked with −1e9 where the mask is 0, **the encoder output
normalised again by a LayerNorm of each decoder layer before the cross-attention reads it**, no final LayerNorm after
either stack, a sinusoid table of its own (`pos / 10000^(2i/d)`, sine on even and cosine on odd channels) added after
the lookup × √C, Xavier initialisation) at a tiny size (width 32, 4 heads of 8, 2 + 2 layers, feed-forward 64,
vocabularies of 40 and 48, 16 positions), eval mode, seed 0, the LayerNorm gains and shifts set to 1 + N(0, 0.1²) and
N(0, 0.1²) so that a gain or shift left out shows, two source sentences of 7 IDs (the second padded with 0 after 5)
and two target sentences of 6 IDs (the second padded after 4), the masks made by upstream's own `compute_src_mask`
and `compute_tgt_mask`, one forward pass as its training step runs it.
Trace: python -m transformer_trace trace driver.py"""
import torch

from transformer.attention import compute_src_mask, compute_tgt_mask
from transformer.model import Transformer

PAD = 0
torch.manual_seed(0)
model = Transformer(src_vocab_size=40, tgt_vocab_size=48, num_encoder_stacks=2, num_decoder_stacks=2, d_model=32,
                    d_ffn=64, num_encoder_heads=4, num_decoder_heads=4, max_seq_len=16, dropout=0.1).eval()
with torch.no_grad():
    for name, parameter in model.named_parameters():
        if name.endswith("gamma"):
            parameter.copy_(1.0 + 0.1 * torch.randn_like(parameter))
        elif name.endswith("beta"):
            parameter.copy_(0.1 * torch.randn_like(parameter))

src = torch.tensor([[5, 17, 9, 32, 3, 28, 11], [2, 33, 20, 14, 6, PAD, PAD]])  # Snapshot #1
tgt = torch.tensor([[1, 7, 41, 12, 30, 9], [1, 25, 3, 44, PAD, PAD]])  # Snapshot #2
src_mask = compute_src_mask(src, PAD)
tgt_mask = compute_tgt_mask(tgt, PAD)
with torch.no_grad():
    logits, _ = model(src, tgt, tgt_mask, src_mask)
print("logits", tuple(logits.shape), "argmax", logits.argmax(-1).tolist())
