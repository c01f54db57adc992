"""A stand-in for subword_nmt.apply_bpe (ours, not upstream): never called in this forward pass."""
