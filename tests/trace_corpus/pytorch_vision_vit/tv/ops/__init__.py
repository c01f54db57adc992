"""Ours: a package path so that vision_transformer.py's relative imports resolve (to torchvision itself)."""
