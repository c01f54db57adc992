"""Stub (ours, not upstream): alibi_transformer.py imports `flash_attn_varlen_func` for its `attn_impl='flash'`
path; the traced model runs `attn_impl='torch'`, so it is never called."""


def flash_attn_varlen_func(*args, **kwargs):
    raise NotImplementedError("flash-attn is not installed (stub)")
