"""Stub (ours, not upstream): gpt/model.py makes GPT-2's tokenizer at import; the driver feeds token IDs."""


def encoding_for_model(name):
    return None
