"""What the ViT report ships as data for the explorer: every block's attention and output, and the input image."""

from __future__ import annotations

from typing import Any

from transformer_trace.places import Place, layer_pattern
from transformer_trace.tensor_data import AttentionGroup, Exploration, image_png
from transformer_trace.models.vit import LEGEND, EncoderBlock, SelfAttention


ATTENTION = Place("blocks.{layer}.attn", SelfAttention)  # every block's, the layer its placeholder
BLOCK = Place("blocks.{layer}", EncoderBlock)


def _names(config: Any) -> list[str]:
    return [ref.name({"layer": str(i)}) for i in range(config.n_layers) for ref in (ATTENTION.PROBS, BLOCK.OUTPUT)]


def _labels(run: Any) -> dict[str, list[str]]:
    side = run.dims["H"] // run.dims["P"]
    patches = [f"r{r}c{c}" for r in range(side) for c in range(side)]
    return {"patches": patches, "tokens": ["[CLS]", *patches], "channels": ["R", "G", "B"],
            "classes": [str(c) for c in run.inputs["class_names"]]}


def _image(run: Any) -> tuple[bytes, int, bool] | None:
    """The preprocessed image, for laying one query's attention over it; [CLS] comes before the patches."""
    return image_png(run.cpu("image"), run.inputs["mean"], run.inputs["std"]), run.dims["H"] // run.dims["P"], True


EXPLORATION = Exploration(
    names=_names,
    groups=(
        AttentionGroup(
            "blocks",
            "Self-attention over [CLS] and the patches",
            "block",
            layer_pattern(ATTENTION.PROBS, "layer"),
            "tokens",
            "tokens",
        ),
    ),
    axis_labels=LEGEND.axis_labels(
        Ch="channels", N="patches", N1="tokens", h="heads", K="classes"
    ),  # label keys by the model's shape symbols (a symbol not in its legend fails here)
    labels=_labels,
    image=_image,
)
