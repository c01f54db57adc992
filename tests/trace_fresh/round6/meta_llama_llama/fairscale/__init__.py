"""Our stub of fairscale (not installed): the model-parallel layers llama/model.py imports, for one process (world size
1), where fairscale's own layers are plain nn.Linear / nn.Embedding computations."""
