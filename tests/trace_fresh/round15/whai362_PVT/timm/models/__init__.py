"""Ours, a stub (see ../__init__.py): the three modules pvt_v2.py imports from timm.models."""
