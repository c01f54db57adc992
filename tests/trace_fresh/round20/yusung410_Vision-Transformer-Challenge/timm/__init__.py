"""Ours, a stub: timm is not installed here; upstream's patch_embed.py imports only `trunc_normal_` from it (unused)."""
