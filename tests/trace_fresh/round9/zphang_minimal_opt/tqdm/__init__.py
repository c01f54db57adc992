"""Stub (ours, not upstream): tqdm is not installed here; minimal_opt/generate.py imports `tqdm.auto` for a progress
bar the traced forward pass never shows."""
