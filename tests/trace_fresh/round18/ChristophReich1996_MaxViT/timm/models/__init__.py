"""Ours: see ../__init__.py."""
