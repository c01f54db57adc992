"""Driver (ours, not upstream): SamLynnEvans' Transformer at a tiny size (d_model 32, 2 layers, 4 heads), random
weights, a batch of two padded sentences; the masks are built here, before the forward pass, as the repository's
Batch.py builds them (padding (B, 1, S); target padding & no-peek (B, T, T)). Trace: python -m transformer_trace trace trace_driver.py"""
import numpy as np
import torch

from Models import Transformer

torch.manual_seed(0)
PAD = 0
model = Transformer(src_vocab=24, trg_vocab=24, d_model=32, N=2, heads=4, dropout=0.1).eval()
for p in model.parameters():  # as get_model initialises a model without weights to load
    if p.dim() > 1:
        torch.nn.init.xavier_uniform_(p)
src = torch.tensor([[5, 6, 7, 8, 9, 10, 3], [11, 12, 13, 3, PAD, PAD, PAD]])  # (B, S)
trg = torch.tensor([[2, 14, 15, 16, 17, 18], [2, 19, 20, 21, PAD, PAD]])  # (B, T)
src_mask = (src != PAD).unsqueeze(-2)
size = trg.size(1)
np_mask = torch.from_numpy(np.triu(np.ones((1, size, size)), k=1).astype("uint8")) == 0
trg_mask = (trg != PAD).unsqueeze(-2) & np_mask  # Snapshot #25
with torch.no_grad():
    logits = model(src, trg, src_mask, trg_mask)
print("logits", tuple(logits.shape))
