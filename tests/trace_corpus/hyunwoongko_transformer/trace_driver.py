"""Driver (ours, not upstream): hyunwoongko's Transformer at a tiny size (d_model 32, 2 layers, 4 heads), random
weights, a batch of two sentences padded with its pad index 1, one forward pass in eval mode.
Trace: python -m transformer_trace trace trace_driver.py"""
import torch

from models.model.transformer import Transformer

torch.manual_seed(0)
PAD = 1
model = Transformer(src_pad_idx=PAD, trg_pad_idx=PAD, trg_sos_idx=2, enc_voc_size=24, dec_voc_size=24, d_model=32,
                    n_head=4, max_len=16, ffn_hidden=64, n_layers=2, drop_prob=0.1, device="cpu").eval()
src = torch.tensor([[5, 6, 7, 8, 9, 10, 3], [11, 12, 13, 3, PAD, PAD, PAD]])  # (B, S)
trg = torch.tensor([[2, 14, 15, 16, 17, 18], [2, 19, 20, 21, PAD, PAD]])  # (B, T)
with torch.no_grad():
    logits = model(src, trg)
print("logits", tuple(logits.shape))
