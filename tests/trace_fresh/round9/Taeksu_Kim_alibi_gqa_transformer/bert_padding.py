"""Stub (ours, not upstream): alibi_transformer.py imports `bert_padding` (flash-attention's padding helpers, used
only by its `attn_impl='flash'` path); the traced model runs `attn_impl='torch'`, so these are never called."""


def _flash_only(*args, **kwargs):
    raise NotImplementedError("flash-attention's padding helpers are not installed (stub)")


index_first_axis = pad_input = unpad_input = _flash_only
