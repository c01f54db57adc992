"""Ours, not upstream: an empty package file. Upstream's models/__init__.py imports every model of the repository
(HRNet, Swin, VOLO, ...); the CaiT needs only models/cait.py and models/layers.py."""
