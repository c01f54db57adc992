"""Stub (ours, not upstream): gemma/tokenizer.py imports sentencepiece, which this environment lacks, and loads a
tokenizer model file this driver does not have. The one forward pass traced here takes token IDs directly, so the
model only needs the class to exist; nothing calls its methods."""


class Tokenizer:

    def __init__(self, model_path=None):
        self.model_path = model_path
