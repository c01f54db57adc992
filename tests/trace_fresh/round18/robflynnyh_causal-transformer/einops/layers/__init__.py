"""Part of the minimal einops stand-in (ours): see ../__init__.py."""
