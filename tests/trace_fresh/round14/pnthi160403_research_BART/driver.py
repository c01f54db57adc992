"""Driver (ours, not upstream): pnthi160403/research_BART's `BartSeq2seq` (`models/bart/seq2seq.py` on
`models/bart/architecture/`, copied as the package `bart/`): a research student's BART written from scratch with its
attention chosen from a registry of five kinds; traced with **multi-query attention** (`type_attn=
"multiquery_scaled_dot_product"`: every head's queries, one key and one value projection of the head size, unsqueezed
and expanded over the heads, in the encoder, the decoder's masked self-attention and its cross-attention), post-norm
layers, a LayerNorm of the embeddings before each stack (`layernorm_embedding`), learned positions from a table whose
padding row is zero, masks of 1 = keep built from the padding masks and `torch.triu` and repeated over the heads. Tiny
size (width 32, 4 heads of 8, feed-forward 64, 2 + 2 layers, vocabularies of 24, 32 positions), upstream's
initialisation (normal, std 0.02), seed 0, eval mode, one forward pass with teacher forcing (no labels).
Trace: python -m transformer_trace trace driver.py"""
import torch

from bart.seq2seq import BartSeq2seq, BartSeq2seqConfig

PAD = 1
torch.manual_seed(0)
config = BartSeq2seqConfig(src_vocab_size=24, tgt_vocab_size=24, d_model=32, encoder_layers=2, decoder_layers=2,
                           encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                           decoder_ffn_dim=64, max_position_embeddings=32, pad_idx=PAD,
                           type_attn="multiquery_scaled_dot_product")
model = BartSeq2seq(config).eval()

src_ids = torch.tensor([[5, 9, 13, 6, 17, 8, 11], [4, 12, 3, 16, 7, PAD, PAD]])  # Snapshot #1
tgt_ids = torch.tensor([[0, 7, 14, 9, 20, 6], [0, 10, 18, 5, 22, 3]])  # Snapshot #2
with torch.no_grad():
    logits = model(attention_mask=(src_ids != PAD).long(), decoder_input_ids=tgt_ids,
                   decoder_attention_mask=(tgt_ids != PAD).long(), input_ids=src_ids)
print("logits", tuple(logits.shape), "next tokens", logits[:, -1].argmax(-1).tolist())
