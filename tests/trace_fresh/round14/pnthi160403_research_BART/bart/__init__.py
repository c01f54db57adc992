# Our stub, not upstream: upstream's models/bart/__init__.py imports every variant of the package (its Hugging Face
# `transformers` wrapper too); the driver needs only `seq2seq.py` and `architecture/`, so this package file is empty.
