"""Ours, not upstream: a stand-in for the few names of timm (pytorch-image-models, not installed here) that
ChristophReich1996/MaxViT imports, written after timm's own definitions of them (timm 0.6, the version upstream's
README names): `models.efficientnet_blocks` (`SqueezeExcite`, `DepthwiseSeparableConv`) and `models.layers`
(`drop_path`, `trunc_normal_`, `Mlp`, `DropPath`)."""
from . import models  # noqa: F401
