"""Ours, a stub: timm is not installed here. pvt_v2.py imports DropPath, to_2tuple, trunc_normal_
(timm.models.layers), register_model (timm.models.registry) and _cfg (timm.models.vision_transformer); timm/models/
holds those, written for this measurement."""
