"""What the encoder–decoder report ships as data for the explorer: every layer's attention and output."""

from __future__ import annotations

from typing import Any

from transformer_trace.places import Place, layer_pattern
from transformer_trace.tensor_data import AttentionGroup, Exploration
from transformer_trace.models.encoder_decoder import LEGEND, DecoderLayer, EncoderLayer, MultiHeadAttention


# Every layer's, the layer its placeholder.
ENCODER, DECODER = Place("encoder.layers.{layer}", EncoderLayer), Place("decoder.layers.{layer}", DecoderLayer)
ENCODER_SELF = Place("encoder.layers.{layer}.self_attn", MultiHeadAttention)
DECODER_SELF = Place("decoder.layers.{layer}.self_attn", MultiHeadAttention)
DECODER_CROSS = Place("decoder.layers.{layer}.cross_attn", MultiHeadAttention)


def _names(config: Any) -> list[str]:
    names: list[str] = []
    for i in range(config.n_encoder_layers):
        names += [ref.name({"layer": str(i)}) for ref in (ENCODER_SELF.PROBS, ENCODER.OUTPUT)]
    for i in range(config.n_decoder_layers):
        names += [ref.name({"layer": str(i)}) for ref in (DECODER_SELF.PROBS, DECODER_CROSS.PROBS, DECODER.OUTPUT)]
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
            layer_pattern(ENCODER_SELF.PROBS, "layer"),
            "src_tokens",
            "src_tokens",
        ),
        AttentionGroup(
            "decoder-self",
            "Decoder masked self-attention",
            "layer",
            layer_pattern(DECODER_SELF.PROBS, "layer"),
            "tgt_tokens",
            "tgt_tokens",
        ),
        AttentionGroup(
            "cross",
            "Cross-attention (target queries, source keys)",
            "layer",
            layer_pattern(DECODER_CROSS.PROBS, "layer"),
            "tgt_tokens",
            "src_tokens",
        ),
    ),
    axis_labels=LEGEND.axis_labels(
        S="src_tokens", T="tgt_tokens", V_src="src_words", V="tgt_words", h="heads"
    ),  # label keys by the model's shape symbols (a symbol not in its legend fails here)
    labels=_labels,
)
