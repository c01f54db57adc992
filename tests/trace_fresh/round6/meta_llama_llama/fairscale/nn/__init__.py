"""Our stub: see fairscale/__init__.py."""
