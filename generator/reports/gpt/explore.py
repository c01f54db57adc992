"""What the GPT report ships as data for the explorer: every block's causal attention and output, byte-labelled."""

from __future__ import annotations

from typing import Any

from transformer_trace.places import Place, layer_pattern
from transformer_trace.tensor_data import AttentionGroup, Exploration
from transformer_trace.models.gpt import LEGEND, Block, CausalSelfAttention


ATTENTION = Place("blocks.{layer}.attn", CausalSelfAttention)  # every block's, the layer its placeholder
BLOCK = Place("blocks.{layer}", Block)


def _names(config: Any) -> list[str]:
    return [ref.name({"layer": str(i)}) for i in range(config.n_layers) for ref in (ATTENTION.PROBS, BLOCK.OUTPUT)]


def _labels(run: Any) -> dict[str, list[str]]:
    from transformer_trace.models.gpt import byte_label

    return {"bytes": list(run.inputs["prompt_bytes"]), "vocabulary": [byte_label(b) for b in range(run.dims["V"])]}


EXPLORATION = Exploration(
    names=_names,
    groups=(
        AttentionGroup(
            "blocks",
            "Causal self-attention over the prompt's bytes",
            "block",
            layer_pattern(ATTENTION.PROBS, "layer"),
            "bytes",
            "bytes",
        ),
    ),
    axis_labels=LEGEND.axis_labels(
        T="bytes", h="heads", V="vocabulary"
    ),  # label keys by the model's shape symbols (a symbol not in its legend fails here)
    labels=_labels,
)
