"""Ours, a stub: upstream's CaiT/__init__.py imports `.attn_talling_head` (a misspelling; the module is
attn_talking_head.py), so the package cannot be imported as committed. This stand-in re-exports the real module."""
from .attn_talking_head import *  # noqa: F401,F403
