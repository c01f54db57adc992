"""Ours, a stub: timm is not installed here. modeling_finetune.py imports only drop_path, to_2tuple, trunc_normal_
(timm.models.layers) and register_model (timm.models.registry); timm/models/ holds those four, written for this
measurement."""
