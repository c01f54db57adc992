"""What the toy ViT report ships as data for the explorer: the layer's attention and output, and the 6×6 image."""

from __future__ import annotations

import io
from typing import Any

from transformer_trace.places import Place, layer_pattern
from transformer_trace.tensor_data import AttentionGroup, Exploration
from transformer_trace.models.toy_vit import LEGEND, EncoderBlock, SelfAttention


ATTENTION = Place("blocks.{layer}.attn", SelfAttention)  # every block's, the layer its placeholder
BLOCK = Place("blocks.{layer}", EncoderBlock)


def _names(config: Any) -> list[str]:
    return [ref.name({"layer": str(i)}) for i in range(config.n_layers) for ref in (ATTENTION.PROBS, BLOCK.OUTPUT)]


def _labels(run: Any) -> dict[str, list[str]]:
    return {"patches": list(run.inputs["patches"]), "tokens": list(run.inputs["tokens"]),
            "classes": [str(c) for c in run.inputs["class_names"]]}


def _image(run: Any) -> tuple[bytes, int, bool]:
    """The grayscale image as the model saw it, for laying one query's attention over the 3×3 patch grid ([CLS]
    first)."""
    from PIL import Image

    gray = run.cpu("image")[0, 0].clamp(0, 1).mul(255).round().byte().numpy()  # (1, 1, H, W) -> (H, W), 0-255
    buffer = io.BytesIO()
    Image.fromarray(gray, mode="L").convert("RGB").save(buffer, format="PNG", optimize=True)
    return buffer.getvalue(), run.dims["H"] // run.dims["P"], True


EXPLORATION = Exploration(
    names=_names,
    groups=(
        AttentionGroup(
            "layers",
            "Self-attention over [CLS] and the patches A–I",
            "layer",
            layer_pattern(ATTENTION.PROBS, "layer"),
            "tokens",
            "tokens",
        ),
    ),
    axis_labels=LEGEND.axis_labels(
        N="patches", N1="tokens", h="heads", K="classes"
    ),  # label keys by the model's shape symbols (a symbol not in its legend fails here)
    labels=_labels,
    image=_image,
)
