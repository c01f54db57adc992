"""Ours, a stub: tiktoken is not installed here. Upstream's main.py imports it at the top and uses it only to tokenise
its data set (skipped: the driver hands it a data.pt) and in the inference demo after its own `torch.load('model.pt')`
(where the import stops). Nothing the forward pass runs calls it."""


def get_encoding(name):
    raise RuntimeError("tiktoken is a stub here (the driver does not tokenise text)")
