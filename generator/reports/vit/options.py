"""The ViT report's options: image, weights and size preset, with defaults from models/vit.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from transformer_trace.options import RunOptions, check_memory, option
from transformer_trace.models.vit import PRESETS, ViTConfig, VisionTransformer


@dataclass(frozen=True)
class VitOptions(RunOptions):
    image: Path | None = field(default=None, metadata=option("image file: JPEG, PNG, WebP, GIF or BMP (told from its "
                                                             "content)", kind="path", form={
        "label": "Image", "type": "file", "accept": "image/jpeg,image/png,image/webp,image/gif,image/bmp",
                                                                                            "current": "image_name",
        "hint": "JPEG, PNG, WebP, GIF or BMP up to 20 MB: choose a file or drop it here; none: the bundled image"}))
    weights: str = field(default="random", metadata=option(
        "random (seeded), imagenet (torchvision IMAGENET1K_V1, downloads once) or PATH to a torchvision ViT state dict",
        api_values=("random",)))  # through the regenerate API: seeded weights, never a file or a download
    size: str = field(default="b16", metadata=option("ViT size preset", flag="--vit-size", choices=tuple(PRESETS)))

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_layer("blocks")
        cfg = self.config()
        n_params = cfg.n_layers * (4 * cfg.d_model**2 + 2 * cfg.d_model * cfg.mlp_dim) + cfg.d_model * (
            3 * cfg.patch_size**2 + cfg.n_classes
        )
        n_tokens = cfg.n_patches + 1
        check_memory(4 * (n_params + cfg.n_layers * cfg.n_heads * n_tokens**2 * 3), f"the ViT preset {self.size}")

    @classmethod
    def example_change(cls) -> list[str]:
        return ["--seed", "8"]

    def config(self) -> ViTConfig:
        return PRESETS[self.size]

    def n_layers(self) -> int:
        return PRESETS[self.size].n_layers

    NAMED_PASSES = {"block2": (2, "{block}"), "block_last": (-1, "{block}")}

    def layer_places(self, layer: int) -> dict[str, str]:
        block = layer - 1
        return {
            "block": f"blocks.{block}",
            "block_prev": "tokens_pos" if block == 0 else f"blocks.{block - 1}.output",
        }

    def build_model(self) -> VisionTransformer:
        return VisionTransformer(self.config())
