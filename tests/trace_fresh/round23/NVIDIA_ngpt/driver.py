"""Ours: one forward pass of NVIDIA/ngpt's `GPT` with `use_nGPT=1` (`model.py`): the **normalized Transformer** (nGPT):
no LayerNorm or RMSNorm anywhere; each residual update is a step on the unit hypersphere,
`h = justnorm(A + lr * (B - A))` with `A = justnorm(h)`, `B = justnorm(sublayer(h))` and `lr` a learned per-channel
"eigen learning rate" (0.05 at init); q and k per head after the rotary positions (upstream's own pairing of
neighbouring channels, its table computed in the forward pass) normalised to unit length and scaled per channel by a
learned `sqk`, the softmax scale sqrt(head_dim) instead of 1/sqrt(head_dim), the attention computed by
`flash_attn_func` (B, T, h, hs) with `causal=True`; a SwiGLU MLP from one fused `c_fc` Linear whose output is scaled
per channel by a learned `suv` (times sqrt(n_embd)), `u * silu(v)` with the *second* half gated; no final norm; untied
logits scaled per vocabulary entry by a learned `sz`; the inference path's logits of the last position only
(`x[:, [-1], :]`). The Linears are bfloat16 (upstream's `dtype=torch.bfloat16`), so the forward runs under
`torch.autocast(bfloat16)` as upstream's train.py runs it (`ctx`), here on the CPU. Untrained, eval mode, seed 0
(upstream's own init: N(0, base_scale) with base_scale = 1/sqrt(n_embd)). Tiny sizes: vocabulary 64, width 32,
4 heads of 8, MLP 4·32 (fused c_fc 2·4·32), 2 layers; two sequences of 8 tokens.
`flash_attn.py` beside it is our stub (flash-attn is not installed here and needs CUDA).
Trace: python -m transformer_trace trace driver.py"""
import torch

from model import GPT, GPTConfig

torch.manual_seed(0)
config = GPTConfig(block_size=16, vocab_size=64, n_layer=2, n_head=4, n_embd=32, base_scale=1.0 / 32 ** 0.5,
                   use_nGPT=1, dropout=0.0, bias=False)
model = GPT(config).eval()
ids = torch.randint(0, 64, (2, 8))  # BREAKPOINT G01
with torch.no_grad(), torch.autocast(device_type="cpu", dtype=torch.bfloat16):
    logits, _ = model(ids)
print("logits", tuple(logits.shape), logits.dtype, [round(v, 5) for v in logits[0, -1, :4].float().tolist()])
