"""Ours: the few names of timm (not installed here) that deit's models_v2.py imports, written from timm's documented behaviour."""
