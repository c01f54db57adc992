"""Ours, a stub: timm is not installed here. cls_cvt.py imports only DropPath and trunc_normal_ (timm.models.layers);
timm/models/ holds those, written for this measurement."""
