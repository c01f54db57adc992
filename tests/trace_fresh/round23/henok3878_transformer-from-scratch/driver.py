"""Ours: one forward pass of henok3878/transformer-from-scratch's encoder-decoder `Transformer`
(`src/transformer/`), a learner's "Attention Is All You Need" from scratch for German-English translation: one
`MultiHeadAttention` class for the three attentions (q, k and v projected on lines of their own, bias-free, then viewed
and transposed; `(query @ key.transpose(-2, -1)) / sqrt(head_dim)`, `masked_fill(mask == 0, -inf)`, softmax, dropout,
`attn @ value`, heads merged by transpose and view, `out_proj`), post-norm layers with a LayerNorm class of the
author's own (unbiased std, eps added to the std), a ReLU FFN, the lookup times sqrt(d_model) and the paper's sinusoid
table in an `nn.Sequential` per side, the output Linear tied to the target embedding. Untrained, eval mode, seed 0.
Tiny sizes: vocabularies 48 and 40 (separate tokenizers), width 32, 4 heads of 8, FFN 64, 2 layers each; 2 source
sentences of 7 tokens (the second padded with 2 pad tokens) and 2 target inputs of 6. The masks are built as upstream's
train.py `create_masks` builds them (not imported: train.py needs wandb and datasets): the source padding mask
(B, 1, 1, S) and the target mask, padding & lower-triangular, (B, 1, T, T) booleans.
`pydantic.py` beside it is our stub (pydantic is not installed).
Trace: python -m transformer_trace trace driver.py"""
import torch

from transformer import Transformer
from transformer.config import DataConfig, ModelConfig, TokenizationStrategy

torch.manual_seed(0)
model_config = ModelConfig(src_vocab_size=48, tgt_vocab_size=40, d_model=32, num_heads=4, d_ff=64,
                           num_encoder_layers=2, num_decoder_layers=2, dropout=0.1, src_max_len=16, tgt_max_len=16)
data_config = DataConfig(dataset_name="toy", subset="de-en", lang_src="de", lang_tgt="en",
                         tokenization_strategy=TokenizationStrategy.SEPARATE, validation_fraction=0.0)
model = Transformer(model_config, data_config).eval()
padding_idx = 0
src = torch.randint(1, 48, (2, 7))  # Snapshot #1
src[1, -2:] = padding_idx
tgt = torch.randint(1, 40, (2, 6))  # Snapshot #2
src_mask = (src != padding_idx).unsqueeze(dim=1).unsqueeze(2)
tgt_padding_mask = (tgt != padding_idx).unsqueeze(dim=1).unsqueeze(dim=2)
tgt_lower_matrix = torch.tril(torch.ones(size=(tgt.size(1), tgt.size(1)))).bool()
tgt_mask = tgt_padding_mask & tgt_lower_matrix  # Snapshot #25
with torch.no_grad():
    logits = model(src, tgt, src_mask=src_mask, tgt_mask=tgt_mask, kv_mask=src_mask)
print("logits", tuple(logits.shape), [round(v, 5) for v in logits[0, -1, :4].tolist()])
