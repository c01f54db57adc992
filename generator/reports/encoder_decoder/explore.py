"""What the encoder–decoder report ships as data for the explorer: every layer's attention and output."""

from __future__ import annotations

from typing import Any

from generator.tensor_data import AttentionGroup, Exploration

ATTENTION = r"(scores|masked_scores|probs)"


def _names(config: Any) -> list[str]:
    names: list[str] = []
    for i in range(config.n_encoder_layers):
        names += [f"encoder.layers.{i}.self_attn.probs", f"encoder.layers.{i}.output"]
    for i in range(config.n_decoder_layers):
        names += [f"decoder.layers.{i}.self_attn.probs", f"decoder.layers.{i}.cross_attn.probs", f"decoder.layers.{i}.output"]
    return names


def _labels(run: Any) -> dict[str, list[str]]:
    return {key: [str(w) for w in run.inputs[key]] for key in ("src_tokens", "tgt_tokens", "src_words", "tgt_words")}


EXPLORATION = Exploration(
    names=_names,
    groups=(
        AttentionGroup("encoder-self", "Encoder self-attention", "layer", r"encoder\.layers\.(\d+)\.self_attn\.probs", "src_tokens", "src_tokens"),
        AttentionGroup("decoder-self", "Decoder masked self-attention", "layer", r"decoder\.layers\.(\d+)\.self_attn\.probs", "tgt_tokens", "tgt_tokens"),
        AttentionGroup("cross", "Cross-attention (target queries, source keys)", "layer", r"decoder\.layers\.(\d+)\.cross_attn\.probs", "tgt_tokens", "src_tokens"),
    ),
    axes=(
        (r"src_ids", (None, "src_tokens")),
        (r"tgt_ids", (None, "tgt_tokens")),
        (r"src_emb_weight", ("src_words", None)),
        (r"src_embed|src_with_pos|memory", (None, "src_tokens", None)),
        (r"tgt_embed|tgt_with_pos|dec_final", (None, "tgt_tokens", None)),
        (r"tgt_mask", (None, None, "tgt_tokens", "tgt_tokens")),
        (r"logits", (None, "tgt_tokens", "tgt_words")),
        (rf"encoder\.layers\.\d+\.self_attn\.{ATTENTION}", (None, "heads", "src_tokens", "src_tokens")),
        (r"encoder\.layers\.\d+\.self_attn\.(q_heads|k_heads|v_heads|context)", (None, "heads", "src_tokens", None)),
        (r"encoder\..*", (None, "src_tokens", None)),
        (rf"decoder\.layers\.\d+\.self_attn\.{ATTENTION}", (None, "heads", "tgt_tokens", "tgt_tokens")),
        (rf"decoder\.layers\.\d+\.cross_attn\.{ATTENTION}", (None, "heads", "tgt_tokens", "src_tokens")),
        (r"decoder\.layers\.\d+\.cross_attn\.(k_heads|v_heads)", (None, "heads", "src_tokens", None)),
        (r"decoder\.layers\.\d+\.cross_attn\.(k|v)", (None, "src_tokens", None)),
        (r"decoder\.layers\.\d+\.(self_attn|cross_attn)\.(q_heads|k_heads|v_heads|context)", (None, "heads", "tgt_tokens", None)),
        (r"decoder\..*", (None, "tgt_tokens", None)),
    ),
    labels=_labels,
)
