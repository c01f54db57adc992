"""Driver (ours, not upstream): the upstream Transformer at a tiny size, random weights, a batch of two sentences with
padding, run once in eval mode. Trace: python -m transformer_trace trace trace_driver.py"""
import torch

from transformer.Models import Transformer

torch.manual_seed(0)
PAD = 0
model = Transformer(n_src_vocab=24, n_trg_vocab=24, src_pad_idx=PAD, trg_pad_idx=PAD, d_word_vec=32, d_model=32,
                    d_inner=64, n_layers=2, n_head=4, d_k=8, d_v=8, dropout=0.1, n_position=16,
                    trg_emb_prj_weight_sharing=False, emb_src_trg_weight_sharing=False).eval()
src = torch.tensor([[5, 6, 7, 8, 9, 10, 3], [11, 12, 13, 3, PAD, PAD, PAD]])  # (B, S): the second padded
trg = torch.tensor([[2, 14, 15, 16, 17, 18], [2, 19, 20, 21, PAD, PAD]])  # (B, T)
with torch.no_grad():
    logits = model(src, trg)
print("logits", tuple(logits.shape))
