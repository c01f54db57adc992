"""Stub (ours, not upstream): model.py imports `AutoTokenizer` at the top but never uses it in the model."""
AutoTokenizer = None
