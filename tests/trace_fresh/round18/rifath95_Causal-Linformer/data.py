"""Stand-in for upstream's `data.py` (ours, not upstream): upstream reads tinyShakespeare.txt (1.1 MB) to count its
characters and to sample training batches; one forward pass needs only the vocabulary size, tiny Shakespeare's 65
characters."""
vocab_size = 65


def get_batch(split):
    raise NotImplementedError("the driver traces one forward pass; no training data here")
