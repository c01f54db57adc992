"""Ours, a stub (see ../__init__.py): the two modules modeling_finetune.py imports from timm.models."""
