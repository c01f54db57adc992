"""A stand-in for sentencepiece (ours, not upstream; the project's environment has no sentencepiece): imported by
joeynmt/tokenizers.py for its SentencePiece tokenizer, which this forward pass on token IDs never builds."""
