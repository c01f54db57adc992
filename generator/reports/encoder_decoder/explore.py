"""What the encoder–decoder report ships as data for the explorer: every layer's attention and output."""

from __future__ import annotations

from typing import Any

from generator.tensor_data import AttentionGroup, Exploration
from models.encoder_decoder import LEGEND


def _names(config: Any) -> list[str]:
    names: list[str] = []
    for i in range(config.n_encoder_layers):
        names += [f"encoder.layers.{i}.self_attn.probs", f"encoder.layers.{i}.output"]
    for i in range(config.n_decoder_layers):
        names += [f"decoder.layers.{i}.self_attn.probs", f"decoder.layers.{i}.cross_attn.probs",
                  f"decoder.layers.{i}.output"]
    return names


def _labels(run: Any) -> dict[str, list[str]]:
    return {key: [str(w) for w in run.inputs[key]] for key in ("src_tokens", "tgt_tokens", "src_words", "tgt_words")}


EXPLORATION = Exploration(
    names=_names,
    groups=(
        AttentionGroup(
            "encoder-self",
            "Encoder self-attention",
            "layer",
            r"encoder\.layers\.(\d+)\.self_attn\.probs",
            "src_tokens",
            "src_tokens",
        ),
        AttentionGroup(
            "decoder-self",
            "Decoder masked self-attention",
            "layer",
            r"decoder\.layers\.(\d+)\.self_attn\.probs",
            "tgt_tokens",
            "tgt_tokens",
        ),
        AttentionGroup(
            "cross",
            "Cross-attention (target queries, source keys)",
            "layer",
            r"decoder\.layers\.(\d+)\.cross_attn\.probs",
            "tgt_tokens",
            "src_tokens",
        ),
    ),
    axis_labels=LEGEND.axis_labels(
        S="src_tokens", T="tgt_tokens", V_src="src_words", V="tgt_words", h="heads"
    ),  # label keys by the model's shape symbols (a symbol not in its legend fails here)
    labels=_labels,
)
