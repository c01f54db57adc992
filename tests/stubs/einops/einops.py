"""`einops.einops`, the module the real package defines `rearrange`, `repeat` and `reduce` in (ours: they are those of
../__init__.py; round eighteen's ComVEX imports `from einops.einops import rearrange`)."""
from . import rearrange, reduce, repeat  # noqa: F401
