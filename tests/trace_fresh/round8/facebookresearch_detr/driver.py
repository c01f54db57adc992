"""Driver (ours, not upstream): facebookresearch/detr's encoder-decoder Transformer (models/transformer.py, copied
here as transformer.py: sequence-first tensors (S, B, C) throughout, nn.MultiheadAttention for every attention, the
positions added to the queries and keys of every layer but not to the values, a post-norm encoder and decoder
(normalize_before=False, DETR's default), a ReLU feed-forward on one line, the decoder's input zeros and its queries'
positions a learned table (object queries), no causal mask, the image's padding as a key padding mask, a final
decoder LayerNorm) at a tiny size (width 32, 4 heads, 2 encoder and 2 decoder layers, feed-forward 64), random weights
(seed 0; upstream's own xavier initialisation), a batch of two 3x4 feature maps (the second padded in its last
column), 5 object queries, a learned 2-D position table built as DETR's PositionEmbeddingLearned builds it (ours: the
upstream class needs the repository's NestedTensor), one forward pass in eval mode. No stubs.
Trace: python -m transformer_trace trace driver.py"""
import torch
from torch import nn

from transformer import Transformer

torch.manual_seed(0)
d_model, height, width, num_queries = 32, 3, 4, 5
model = Transformer(d_model=d_model, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=64,
                    dropout=0.1, normalize_before=False, return_intermediate_dec=False).eval()
query_embed = nn.Embedding(num_queries, d_model)
row_embed, col_embed = nn.Embedding(50, d_model // 2), nn.Embedding(50, d_model // 2)

features = torch.randn(2, d_model, height, width)
mask = torch.zeros(2, height, width, dtype=torch.bool)
mask[1, :, -1] = True  # the second image is padded in its last column
pos = torch.cat([col_embed.weight[:width].unsqueeze(0).repeat(height, 1, 1),
                 row_embed.weight[:height].unsqueeze(1).repeat(1, width, 1)], dim=-1)
pos = pos.permute(2, 0, 1).unsqueeze(0).repeat(2, 1, 1, 1)
with torch.no_grad():
    hs, memory = model(features, mask, query_embed.weight, pos)
print("decoder output", tuple(hs.shape), "memory", tuple(memory.shape))
