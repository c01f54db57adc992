"""Ours: pandas is not installed; d2l/torch.py imports it at the top for its data-loading helpers, which a ViT's
forward pass never calls."""
