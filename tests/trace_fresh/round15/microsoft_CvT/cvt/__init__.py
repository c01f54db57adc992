"""Ours: a package for CvT's two upstream files (`lib/models/cls_cvt.py` imports `.registry`); upstream's own
`lib/models/__init__.py` also imports its `build.py` (a yacs config), which the traced forward pass does not use."""
