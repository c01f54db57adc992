"""Driver (ours, not upstream): conceptofmind/t5-pytorch's T5 (t5_pytorch/t5_pytorch.py: an encoder-decoder with no
position embeddings but T5's learned relative position bias added to the scores (bucketed distances, one value per
head, scaled by 1/sqrt(hs)) in every self-attention, pre-norm Residual(PreNorm(...)) wrappers with a LayerNorm whose
bias is a zero buffer, separate to_q/to_k/to_v, heads split and merged with einops, the queries scaled before
Q.K^T by einsum, a boolean causal mask filled with -finfo.max, a ReLU feed-forward in an nn.Sequential, a final
LayerNorm in the encoder and the decoder, an untied output Linear) at a tiny size (width 32, 4 heads of 8, 2 encoder
and 2 decoder layers, MLP x2, a vocabulary of 48), random weights (seed 0), a batch of two source sentences of 8
token IDs and two targets of 7, no padding masks (as upstream's own example, whose mask is all True), one
teacher-forced forward pass in eval mode.
Stub: einops/ (a minimal rearrange; einops is not installed here).
Trace: python -m transformer_trace trace driver.py"""
import torch

from t5_pytorch import T5

torch.manual_seed(0)
model = T5(dim=32, enc_num_tokens=48, enc_depth=2, enc_heads=4, enc_dim_head=8, enc_mlp_mult=2,
           dec_num_tokens=48, dec_depth=2, dec_heads=4, dec_dim_head=8, dec_mlp_mult=2, dropout=0.1,
           tie_token_emb=True).eval()
src = torch.tensor([[5, 12, 7, 30, 3, 9, 21, 4], [9, 4, 22, 17, 8, 26, 40, 11]])  # Snapshot #1
tgt = torch.tensor([[1, 14, 6, 40, 11, 2, 33], [1, 33, 19, 8, 27, 45, 9]])  # Snapshot #2
with torch.no_grad():
    logits = model(src, tgt)
print("logits", tuple(logits.shape), "argmax", logits.argmax(-1)[0].tolist())
