"""Ours, a stub (see ../__init__.py)."""
