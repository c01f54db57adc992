"""Ours: one forward pass of zhouhaoyi/Informer2020's `Informer` (`models/`, `utils/masking.py`), the AAAI'21
encoder-decoder for long sequence time-series forecasting, built with `attn='full'` (upstream's `--attn full`, the
canonical attention; its default ProbSparse attention scores a sampled subset of queries) and every other argument at
upstream's defaults (`distil=True`, `mix=True`, `embed='fixed'`, `freq='h'`, `activation='gelu'`):
the inputs are real-valued series (B, L, channels) and their time stamps (month, day, weekday, hour), embedded by a
circular Conv1d (kernel 3) plus the sinusoid table plus fixed sinusoid embeddings of the time stamps; attention in the
layout (B, L, H, E) with `einsum('blhe,bshe->bhls')`, the causal mask (a `TriangularCausalMask`, True = masked, built
inside the attention) applied in place with `masked_fill_(-inf)` and the 1/sqrt(E) applied inside the softmax call
(`softmax(scale * scores)`), the context `einsum('bhls,bshd->blhd')`; the decoder's self-attention **mixes** its output
(`out.transpose(2, 1)` before the view, Informer's `mix`); post-norm layers whose feed-forward is two **kernel-1
Conv1d** on the transposed stream; between the encoder layers a distilling `ConvLayer` (Conv1d, BatchNorm, ELU,
MaxPool stride 2: the sequence halves); a final LayerNorm after each stack; `projection` Linear(d_model, c_out), the
last `pred_len` positions returned.
Untrained, eval mode, seed 0. Tiny sizes: 3 channels in and out, d_model 32, 4 heads of 8, d_ff 64, 2 encoder layers
and 2 decoder layers; encoder input 16 steps, decoder input 8 known steps (`label_len`) + 4 zeros (`pred_len`), as
upstream's `exp/exp_informer.py` `_process_one_batch` builds it (exp is not imported: it needs the data loaders).
Trace: python -m transformer_trace trace driver.py"""
import torch

from models.model import Informer

torch.manual_seed(0)
seq_len, label_len, pred_len = 16, 8, 4
model = Informer(enc_in=3, dec_in=3, c_out=3, seq_len=seq_len, label_len=label_len, out_len=pred_len, d_model=32,
                 n_heads=4, e_layers=2, d_layers=2, d_ff=64, dropout=0.05, attn="full").eval()
series = torch.randn(2, seq_len + pred_len, 3)
hours = torch.arange(seq_len + pred_len)
stamps = torch.stack([torch.full_like(hours, 5), 10 + hours // 24, (2 + hours // 24) % 7, hours % 24], dim=-1)
stamps = stamps.float().unsqueeze(0).expand(2, -1, -1)
x_enc = series[:, :seq_len]  # Snapshot #1
x_mark_enc = stamps[:, :seq_len]
dec_inp = torch.zeros(2, pred_len, 3)
x_dec = torch.cat([series[:, seq_len - label_len:seq_len], dec_inp], dim=1)  # Snapshot #2
x_mark_dec = stamps[:, seq_len - label_len:]
with torch.no_grad():
    forecast = model(x_enc, x_mark_enc, x_dec, x_mark_dec)
print("forecast", tuple(forecast.shape), [round(v, 5) for v in forecast[0, -1, :3].tolist()])
