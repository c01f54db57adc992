"""Ours, a stub: scipy is not installed here. cls_cvt.py imports it for `scipy.ndimage.zoom`, used only when a
pretrained checkpoint's position table is resized (never in this measurement)."""
