"""An empty stand-in for scipy.ndimage (ours, not upstream): only imported; see scipy/__init__.py."""
