"""Ours: a stub of the `flash_attn` package (not installed here, and it needs CUDA), enough for upstream's `model.py`:
`flash_attn_func` as flash-attention 2 defines it, q, k, v laid out (B, T, h, hs), `softmax_scale` multiplying Q·Kᵀ,
`causal=True` a lower-triangular mask; computed with `F.scaled_dot_product_attention` on the heads-first transposes."""
import torch.nn.functional as F


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                    alibi_slopes=None, deterministic=False):
    y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), dropout_p=dropout_p,
                                       is_causal=causal, scale=softmax_scale)
    return y.transpose(1, 2)


def flash_attn_qkvpacked_func(*args, **kwargs):
    raise NotImplementedError("not used by model.py's forward")
