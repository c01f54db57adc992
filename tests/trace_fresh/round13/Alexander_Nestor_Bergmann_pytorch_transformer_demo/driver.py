"""Driver (ours, not upstream): Alexander-Nestor-Bergmann/pytorch-transformer-demo's `src/transformer/` (a tutorial
repository's "Attention Is All You Need" encoder–decoder, one module per file: a module-level
`scaled_dot_product_attention()` function called by one `MultiHeadAttention` class for the three uses (no bias in the
q/k/v/output projections), boolean masks True where blocked filled with −inf, **post-norm** layers
(`self.norm1(src + self.dropout(attn_output))`) **and a final LayerNorm after each stack**, a ReLU feed-forward, the
lookup × √C, a sinusoid table added by a `PositionalEncoding` that expects **sequence-first** tensors (the model
transposes the embeddings to (S, B, C) for it and back), Xavier initialisation) at a tiny size (width 32, 4 heads of 8,
2 + 2 layers, feed-forward 64, vocabularies of 40 and 48, 16 positions), eval mode, seed 0, the LayerNorm gains and
shifts set to 1 + N(0, 0.1²) and N(0, 0.1²) so that a gain or shift left out shows, two source sentences of 7 IDs (the
second padded with 0 after 5) and two target sentences of 6 IDs (the second padded after 4), the masks made by
upstream's own `forward` from the padding index 0, one forward pass.
Trace: python -m transformer_trace trace driver.py"""
import torch

from transformer.model import Transformer

PAD = 0
torch.manual_seed(0)
model = Transformer(src_vocab_size=40, tgt_vocab_size=48, d_model=32, num_encoder_layers=2, num_decoder_layers=2, h=4,
                    d_ff=64, dropout=0.1, max_len=16).eval()
with torch.no_grad():
    for name, parameter in model.named_parameters():
        if "norm" in name and name.endswith("weight"):
            parameter.copy_(1.0 + 0.1 * torch.randn_like(parameter))
        elif "norm" in name and name.endswith("bias"):
            parameter.copy_(0.1 * torch.randn_like(parameter))

src = torch.tensor([[5, 17, 9, 32, 3, 28, 11], [2, 33, 20, 14, 6, PAD, PAD]])  # Snapshot #1
tgt = torch.tensor([[1, 7, 41, 12, 30, 9], [1, 25, 3, 44, PAD, PAD]])  # Snapshot #2
with torch.no_grad():
    logits = model(src, tgt, src_pad_idx=PAD, tgt_pad_idx=PAD)
print("logits", tuple(logits.shape), "argmax", logits.argmax(-1).tolist())
