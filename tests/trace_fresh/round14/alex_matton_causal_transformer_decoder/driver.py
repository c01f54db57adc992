"""Driver (ours, not upstream): alex-matton/causal-transformer-decoder's `CausalTransformerDecoder` and
`CausalTransformerDecoderLayer` (subclasses of PyTorch's `nn.TransformerDecoder` / `nn.TransformerDecoderLayer` that,
in eval mode, decode **one new token per call**: each layer computes only the last position's query, attends with it
over the whole target the layer is given, and the decoder concatenates each layer's new row to that layer's cache of
earlier rows), put in the seq2seq model of upstream's `examples/training_example.py` (which trains at import, so its
model is rewritten here: one `nn.Embedding` for source and target, the sinusoid table of PyTorch's tutorial added
sequence-first, `nn.TransformerEncoder` of `nn.TransformerEncoderLayer`s, a Linear classification layer), at a tiny
size (width 32, 4 heads of 8, feed-forward 64, 2 encoder and 2 decoder layers, 20 tokens), seed 0, eval mode.

The traced pass is one decoding step with a cache, as upstream's `predict` runs it after the first token: the cache of
each decoder layer's outputs for the first T - 1 target tokens is made first with PyTorch's own
`nn.TransformerDecoderLayer.forward` and a causal mask (equal to what step-by-step decoding caches; it runs no marked
line), then `decoder(tgt, memory, cache)` decodes the last of T = 5 target tokens.
Trace: python -m transformer_trace trace driver.py"""
import math

import torch
import torch.nn as nn

from causal_transformer_decoder import CausalTransformerDecoder, CausalTransformerDecoderLayer

HDIM, NHEAD, FF, LAYERS, VOCAB = 32, 4, 64, 2, 20


class SinusoidPositions(nn.Module):
    """The paper's sinusoid table, added to a sequence-first (L, B, C) input (as the example's tutorial class)."""

    def __init__(self, width: int, max_len: int = 64):
        super().__init__()
        position = torch.arange(max_len, dtype=torch.float).unsqueeze(1)
        frequencies = torch.exp(torch.arange(0, width, 2).float() * (-math.log(10000.0) / width))
        table = torch.zeros(max_len, 1, width)
        table[:, 0, 0::2] = torch.sin(position * frequencies)
        table[:, 0, 1::2] = torch.cos(position * frequencies)
        self.register_buffer("table", table)

    def forward(self, x):
        return x + self.table[: x.size(0)]


torch.manual_seed(0)
embedding = nn.Embedding(VOCAB, HDIM)
positions = SinusoidPositions(HDIM)
encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model=HDIM, nhead=NHEAD, dim_feedforward=FF),
                                num_layers=LAYERS, enable_nested_tensor=False)
decoder = CausalTransformerDecoder(CausalTransformerDecoderLayer(d_model=HDIM, nhead=NHEAD, dim_feedforward=FF),
                                   num_layers=LAYERS)
classification_layer = nn.Linear(HDIM, VOCAB)
for module in (embedding, encoder, decoder, classification_layer):
    module.eval()

src_ids = torch.tensor([[4, 9, 13, 6, 17, 8, 11], [5, 12, 3, 16, 7, 10, 14]])  # Snapshot #1
tgt_ids = torch.tensor([[1, 4, 4, 9, 9], [1, 5, 5, 12, 12]])  # Snapshot #2

with torch.no_grad():
    src_embed = embedding(src_ids).permute(1, 0, 2)  # Snapshot #4
    src_with_pos = positions(src_embed)  # Snapshot #5
    memory = encoder(src_with_pos)  # Snapshot #19
    tgt_with_pos = positions(embedding(tgt_ids).permute(1, 0, 2))

    # the cache a step-by-step decoding would hold after T - 1 tokens: each layer's outputs for them, made by
    # PyTorch's own decoder layer with a causal mask (no marked line runs here)
    prefix, cache_rows = tgt_with_pos[:-1], []
    causal = nn.Transformer.generate_square_subsequent_mask(prefix.size(0))
    for layer in decoder.layers:
        prefix = nn.TransformerDecoderLayer.forward(layer, prefix, memory, tgt_mask=causal)
        cache_rows.append(prefix)
    cache = torch.stack(cache_rows, dim=0)

    decoded, new_cache = decoder(tgt_with_pos, memory, cache)  # Snapshot #41 decoded
    logits = classification_layer(decoded[-1, :, :])  # Snapshot #42
print("logits", tuple(logits.shape), "next tokens", logits.argmax(-1).tolist())
