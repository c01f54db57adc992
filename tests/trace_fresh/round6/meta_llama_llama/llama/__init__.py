# Our stub (not upstream): upstream's llama/__init__.py imports generation.py and the sentencepiece tokenizer, which a
# forward pass of the model does not need.
