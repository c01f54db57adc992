"""The snapshot catalogues of both reports: numbering, titles and variables of the seed
reports, the recorded tensors behind each snapshot, its named shape, its check and figures.

Record names may hold placeholders for the traced layer, filled from the run:
``{enc}``/``{dec}`` (encoder-decoder layers), ``{block}`` (ViT block), and the
tensors feeding them (``{enc_prev}``, ``{dec_prev}``, ``{dec_last}``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Figure:
    id: str  # file stem under figures/
    kind: str  # drawing function in generator.figures
    caption: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Snapshot:
    number: int
    title: str
    variable: str  # as the seed report names it
    stage: str
    tensors: tuple[str, ...]  # record names; the first is the one the page centres on
    shape: tuple[str, ...]  # expected shape of the first tensor, in named dimensions
    check: str
    check_args: dict[str, Any]
    index: str | None = None  # the variable is this slice of the first tensor
    figures: tuple[str, ...] = ()
    differs: str = ""  # how this snapshot differs from the seed report's model, if it does


@dataclass(frozen=True)
class Stage:
    key: str
    title: str
    summary: str


@dataclass(frozen=True)
class Report:
    key: str  # URL folder and --model name
    title: str
    short_title: str
    label_format: str  # how the seed numbers a snapshot, e.g. "#{n}" or "S{n:02d}"
    stages: tuple[Stage, ...]
    snapshots: tuple[Snapshot, ...]
    figures: tuple[Figure, ...]
    overview_figures: tuple[str, ...]
    dims_legend: dict[str, str]
    also_record: tuple[str, ...] = ()  # tensors only the explanations read

    def label(self, number: int) -> str:
        return self.label_format.format(n=number)

    def figure(self, figure_id: str) -> Figure:
        return next(f for f in self.figures if f.id == figure_id)

    def record_names(self) -> set[str]:
        """Every record name (with placeholders) the pages, checks and figures read."""
        names: set[str] = set()

        def collect(value: Any) -> None:
            if isinstance(value, str):
                names.add(value)
            elif isinstance(value, (list, tuple)):
                for item in value:
                    collect(item)

        from generator.checks import TENSOR_ARGUMENTS

        for snap in self.snapshots:
            collect(snap.tensors)
            for key in TENSOR_ARGUMENTS[snap.check]:
                collect(snap.check_args.get(key))
        collect(self.also_record)
        for fig in self.figures:
            for key, value in fig.args.items():
                if key.endswith("tensor") or key.endswith("tensors"):
                    collect(value)
        return names


def _attention(prefix: str) -> dict[str, str]:
    return {f"{part}": f"{prefix}.{part}" for part in ("q", "k", "v", "q_heads", "k_heads", "v_heads", "scores", "masked_scores", "weights", "context", "concat", "out")}


ENC, DEC = _attention("{enc}.self_attn"), _attention("{dec}.self_attn")
CROSS = _attention("{dec}.cross_attn")

ENCODER_DECODER = Report(
    key="encoder-decoder",
    title="Encoder–decoder Transformer",
    short_title="Encoder–decoder",
    label_format="#{n}",
    dims_legend={
        "B": "batch size",
        "S": "source length (tokens)",
        "T": "target length (tokens)",
        "C": "model width d_model",
        "h": "attention heads",
        "hs": "head size d_model / h",
        "F": "feed-forward width d_ff",
        "V_src": "source vocabulary size",
        "V": "target vocabulary size",
    },
    stages=(
        Stage("input", "Input & embedding", "From words to IDs to vectors with position information."),
        Stage("encoder", "Encoder", "One encoder layer, traced operation by operation."),
        Stage("decoder", "Decoder", "One decoder layer: masked self-attention, cross-attention over the encoder, feed-forward."),
        Stage("output", "Output", "From the decoder's last states to scores over the target vocabulary."),
    ),
    snapshots=(
        Snapshot(1, "Raw input tokens (IDs)", "src_ids", "input", ("src_ids",), ("S",), "token_ids", {"ids": "src_ids", "sentence": "src"}, index="[0]", figures=("tokens",)),
        Snapshot(2, "Target tokens (IDs)", "tgt_ids", "input", ("tgt_ids",), ("T",), "token_ids", {"ids": "tgt_ids", "sentence": "tgt"}, index="[0]", figures=("tokens",)),
        Snapshot(3, "Embedding weight matrix (slice)", "emb_weight_slice", "input", ("src_emb_weight",), ("min(V_src, 5)", "min(C, 5)"), "embedding_table_rows", {"table": "src_emb_weight", "parameter": "src_emb.weight", "sentence": "src"}, index="[:5, :5]"),
        Snapshot(4, "Input embeddings after lookup", "src_embed", "input", ("src_embed",), ("B", "S", "C"), "embedding_lookup", {"out": "src_embed", "ids": "src_ids", "table": "src_emb_weight"}, figures=("src_embedding",)),
        Snapshot(5, "Embeddings after adding positional encoding", "src_with_pos", "input", ("src_with_pos",), ("B", "S", "C"), "sinusoidal_positions", {"out": "src_with_pos", "before": "src_embed"}, figures=("positional",)),
        Snapshot(6, "Encoder block input tensor", "enc_in", "encoder", ("{enc}.input",), ("B", "S", "C"), "same_tensor", {"out": "{enc}.input", "source": "{enc_prev}", "claim": "is what the previous stage handed over"}),
        Snapshot(7, "Self-attention queries (Q)", "q", "encoder", (ENC["q"],), ("B", "S", "C"), "linear_of", {"out": ENC["q"], "x": "{enc}.input", "module": "{enc}.self_attn.W_q"}),
        Snapshot(8, "Self-attention keys (K)", "k", "encoder", (ENC["k"],), ("B", "S", "C"), "linear_of", {"out": ENC["k"], "x": "{enc}.input", "module": "{enc}.self_attn.W_k"}),
        Snapshot(9, "Self-attention values (V)", "v", "encoder", (ENC["v"],), ("B", "S", "C"), "linear_of", {"out": ENC["v"], "x": "{enc}.input", "module": "{enc}.self_attn.W_v"}),
        Snapshot(10, "Attention scores before softmax", "scores_pre_mask", "encoder", (ENC["scores"],), ("B", "h", "S", "S"), "scaled_scores", {"out": ENC["scores"], "q_heads": ENC["q_heads"], "k_heads": ENC["k_heads"]}, figures=("enc_scores",)),
        Snapshot(11, "Attention scores after softmax", "attn_weights", "encoder", (ENC["weights"],), ("B", "h", "S", "S"), "softmax_rows", {"out": ENC["weights"], "scores": ENC["scores"]}, figures=("enc_attention",)),
        Snapshot(12, "Multi-head split (Q/K/V)", "q_heads, k_heads, v_heads", "encoder", (ENC["q_heads"], ENC["k_heads"], ENC["v_heads"]), ("B", "h", "S", "hs"), "heads_rejoin", {"heads": [ENC["q_heads"], ENC["k_heads"], ENC["v_heads"]], "full": [ENC["q"], ENC["k"], ENC["v"]]}),
        Snapshot(13, "Multi-head attention output after concatenation", "attn_concat", "encoder", (ENC["concat"],), ("B", "S", "C"), "context_concat", {"out": ENC["concat"], "weights": ENC["weights"], "v_heads": ENC["v_heads"]}),
        Snapshot(14, "Residual connection tensors", "res1_a, res1_b", "encoder", ("{enc}.input", ENC["out"]), ("B", "S", "C"), "sum_of", {"out": "{enc}.residual1", "operands": ["{enc}.input", ENC["out"]]},
                 differs="The seed computed `res1_a = enc_in + attn_out`, `res1_b = attn_out` and normalised `res1_a + res1_b`, which adds the attention output twice. Here the two operands are the layer input and the attention output (after W_o), as in the paper and in `torch.nn.TransformerEncoderLayer`."),
        Snapshot(15, "Layer normalization output", "ln1_out", "encoder", ("{enc}.ln1",), ("B", "S", "C"), "layer_norm_of", {"out": "{enc}.ln1", "x": "{enc}.residual1", "module": "{enc}.ln1"}),
        Snapshot(16, "Feed-forward input", "ff_in", "encoder", ("{enc}.ffn.input",), ("B", "S", "C"), "same_tensor", {"out": "{enc}.ffn.input", "source": "{enc}.ln1", "claim": "is the LayerNorm output of #15"}),
        Snapshot(17, "Feed-forward first linear layer output", "ff1", "encoder", ("{enc}.ffn.fc1",), ("B", "S", "F"), "linear_of", {"out": "{enc}.ffn.fc1", "x": "{enc}.ffn.input", "module": "{enc}.ffn.fc1"}, figures=("enc_ffn",)),
        Snapshot(18, "Feed-forward second linear layer output", "ff2", "encoder", ("{enc}.ffn.fc2",), ("B", "S", "C"), "linear_of", {"out": "{enc}.ffn.fc2", "x": "{enc}.ffn.fc1", "module": "{enc}.ffn.fc2", "activation": "relu"}),
        Snapshot(19, "Encoder block final output tensor", "enc_out", "encoder", ("{enc}.output",), ("B", "S", "C"), "residual_layer_norm", {"out": "{enc}.output", "operands": ["{enc}.ln1", "{enc}.ffn.fc2"], "module": "{enc}.ln2"}),
        Snapshot(20, "Decoder block input tensor", "tgt_with_pos", "decoder", ("{dec}.input",), ("B", "T", "C"), "same_tensor", {"out": "{dec}.input", "source": "{dec_prev}", "claim": "is what the previous stage handed over"}),
        Snapshot(21, "Masked self-attention queries (Q)", "q_m", "decoder", (DEC["q"],), ("B", "T", "C"), "linear_of", {"out": DEC["q"], "x": "{dec}.input", "module": "{dec}.self_attn.W_q"}),
        Snapshot(22, "Masked self-attention keys (K)", "k_m", "decoder", (DEC["k"],), ("B", "T", "C"), "linear_of", {"out": DEC["k"], "x": "{dec}.input", "module": "{dec}.self_attn.W_k"}),
        Snapshot(23, "Masked self-attention values (V)", "v_m", "decoder", (DEC["v"],), ("B", "T", "C"), "linear_of", {"out": DEC["v"], "x": "{dec}.input", "module": "{dec}.self_attn.W_v"}),
        Snapshot(24, "Masked attention scores before mask", "scores_pre_mask_m", "decoder", (DEC["scores"],), ("B", "h", "T", "T"), "scaled_scores", {"out": DEC["scores"], "q_heads": DEC["q_heads"], "k_heads": DEC["k_heads"]}),
        Snapshot(25, "Mask tensor", "tgt_mask", "decoder", ("tgt_mask",), ("1", "1", "T", "T"), "causal_mask", {"out": "tgt_mask"}, figures=("mask",)),
        Snapshot(26, "Masked attention scores after mask + softmax", "attn_weights_m", "decoder", (DEC["weights"],), ("B", "h", "T", "T"), "softmax_rows", {"out": DEC["weights"], "scores": DEC["masked_scores"], "causal": True}, figures=("dec_attention",)),
        Snapshot(27, "Masked self-attention multi-head split", "q_heads_m, k_heads_m, v_heads_m", "decoder", (DEC["q_heads"], DEC["k_heads"], DEC["v_heads"]), ("B", "h", "T", "hs"), "heads_rejoin", {"heads": [DEC["q_heads"], DEC["k_heads"], DEC["v_heads"]], "full": [DEC["q"], DEC["k"], DEC["v"]]}),
        Snapshot(28, "Masked self-attention output after concatenation", "attn_concat_m", "decoder", (DEC["concat"],), ("B", "T", "C"), "context_concat", {"out": DEC["concat"], "weights": DEC["weights"], "v_heads": DEC["v_heads"]}),
        Snapshot(29, "Residual + normalization after masked self-attention", "after_msa_norm", "decoder", ("{dec}.ln1",), ("B", "T", "C"), "residual_layer_norm", {"out": "{dec}.ln1", "operands": ["{dec}.input", DEC["out"]], "module": "{dec}.ln1"}),
        Snapshot(30, "Cross-attention queries (from decoder)", "q_c", "decoder", (CROSS["q"],), ("B", "T", "C"), "linear_of", {"out": CROSS["q"], "x": "{dec}.ln1", "module": "{dec}.cross_attn.W_q"}),
        Snapshot(31, "Cross-attention keys (from encoder)", "k_c", "decoder", (CROSS["k"],), ("B", "S", "C"), "linear_of", {"out": CROSS["k"], "x": "memory", "module": "{dec}.cross_attn.W_k"}),
        Snapshot(32, "Cross-attention values (from encoder)", "v_c", "decoder", (CROSS["v"],), ("B", "S", "C"), "linear_of", {"out": CROSS["v"], "x": "memory", "module": "{dec}.cross_attn.W_v"}),
        Snapshot(33, "Cross-attention score matrix before softmax", "scores_pre_mask_c", "decoder", (CROSS["scores"],), ("B", "h", "T", "S"), "scaled_scores", {"out": CROSS["scores"], "q_heads": CROSS["q_heads"], "k_heads": CROSS["k_heads"]}),
        Snapshot(34, "Cross-attention score matrix after softmax", "attn_weights_c", "decoder", (CROSS["weights"],), ("B", "h", "T", "S"), "softmax_rows", {"out": CROSS["weights"], "scores": CROSS["scores"]}, figures=("cross_attention",)),
        Snapshot(35, "Cross-attention output after concatenation", "attn_concat_c", "decoder", (CROSS["concat"],), ("B", "T", "C"), "context_concat", {"out": CROSS["concat"], "weights": CROSS["weights"], "v_heads": CROSS["v_heads"]}),
        Snapshot(36, "Residual + normalization after cross-attention", "after_ca_norm", "decoder", ("{dec}.ln2",), ("B", "T", "C"), "residual_layer_norm", {"out": "{dec}.ln2", "operands": ["{dec}.ln1", CROSS["out"]], "module": "{dec}.ln2"}),
        Snapshot(37, "Decoder feed-forward input", "ff_in", "decoder", ("{dec}.ffn.input",), ("B", "T", "C"), "same_tensor", {"out": "{dec}.ffn.input", "source": "{dec}.ln2", "claim": "is the normalised output of #36"}),
        Snapshot(38, "Feed-forward first linear layer output", "ff1", "decoder", ("{dec}.ffn.fc1",), ("B", "T", "F"), "linear_of", {"out": "{dec}.ffn.fc1", "x": "{dec}.ffn.input", "module": "{dec}.ffn.fc1"}),
        Snapshot(39, "Feed-forward second linear layer output", "ff2", "decoder", ("{dec}.ffn.fc2",), ("B", "T", "C"), "linear_of", {"out": "{dec}.ffn.fc2", "x": "{dec}.ffn.fc1", "module": "{dec}.ffn.fc2", "activation": "relu"}),
        Snapshot(40, "Decoder block final output tensor", "dec_out", "decoder", ("{dec}.output",), ("B", "T", "C"), "residual_layer_norm", {"out": "{dec}.output", "operands": ["{dec}.ln2", "{dec}.ffn.fc2"], "module": "{dec}.ln3"}),
        Snapshot(41, "Decoder final sequence output (before projection)", "dec_final", "output", ("dec_final",), ("B", "T", "C"), "same_tensor", {"out": "dec_final", "source": "{dec_last}", "claim": "is the last decoder layer's output"}),
        Snapshot(42, "Logits after final linear projection", "logits", "output", ("logits",), ("B", "T", "V"), "linear_of", {"out": "logits", "x": "dec_final", "module": "out_proj"}, figures=("predictions",)),
        Snapshot(43, "Logits slice (first few values for one token)", "logits_slice", "output", ("logits",), ("min(V, 10)",), "linear_of", {"out": "logits", "x": "dec_final", "module": "out_proj", "index": "[0, 0, :10]"}, index="[0, 0, :10]", figures=("predictions",)),
    ),
    figures=(
        Figure("tokens", "token_table", "Words of both sentences with their vocabulary IDs."),
        Figure("src_embedding", "matrix", "Source embeddings: one row per token, one column per feature (first 64 of C shown).", {"tensor": "src_embed", "rows": "src_tokens", "max_cols": 64, "xlabel": "feature", "cmap": "RdBu_r"}),
        Figure("positional", "positional", "What the sinusoidal encoding adds to each position (left), and the sum the encoder reads (right).", {"tensors": ["src_embed", "src_with_pos"], "rows": "src_tokens"}),
        Figure("enc_scores", "attention_heads", "Encoder self-attention scores before softmax, one panel per head.", {"tensor": ENC["scores"], "rows": "src_tokens", "cols": "src_tokens", "cmap": "RdBu_r", "annotate": True}),
        Figure("enc_attention", "attention_heads", "Encoder self-attention weights, one panel per head: row = query token, column = key token.", {"tensor": ENC["weights"], "rows": "src_tokens", "cols": "src_tokens", "annotate": True}),
        Figure("enc_ffn", "matrix", "Feed-forward pre-activations of the encoder layer; ReLU zeroes every negative (blue) entry.", {"tensor": "{enc}.ffn.fc1", "rows": "src_tokens", "max_cols": 256, "xlabel": "hidden unit", "cmap": "RdBu_r"}),
        Figure("mask", "mask", "The causal mask: allowed (0) in white, blocked (−inf) in grey.", {"tensor": "tgt_mask", "rows": "tgt_tokens"}),
        Figure("dec_attention", "attention_heads", "Masked self-attention weights, one panel per head; everything above the diagonal is exactly 0.", {"tensor": DEC["weights"], "rows": "tgt_tokens", "cols": "tgt_tokens", "annotate": True}),
        Figure("cross_attention", "attention_heads", "Cross-attention weights: each target token (row) distributes its attention over the source tokens (columns).", {"tensor": CROSS["weights"], "rows": "tgt_tokens", "cols": "src_tokens", "annotate": True}),
        Figure("predictions", "predictions", "Probabilities over the target vocabulary at each target position; the bar of the predicted word is dark.", {"tensor": "logits", "rows": "tgt_tokens", "cols": "tgt_vocab"}),
    ),
    overview_figures=("tokens", "enc_attention", "cross_attention", "predictions"),
    also_record=("{dec}.residual1", "{dec}.residual2"),
)


_VIT_BLOCK = "{block}"
VIT = Report(
    key="vit",
    title="Vision Transformer (ViT-B/16)",
    short_title="ViT",
    label_format="S{n:02d}",
    dims_legend={
        "B": "batch size",
        "Ch": "colour channels (3)",
        "H": "image height",
        "W": "image width",
        "P": "patch size",
        "N": "patches, (H/P)·(W/P)",
        "N1": "tokens, N + 1 with [CLS]",
        "C": "model width",
        "h": "attention heads",
        "hs": "head size C / h",
        "M": "MLP width",
        "K": "classes",
    },
    stages=(
        Stage("input", "Input & patches", "From pixels to a sequence of patch tokens with [CLS] and positions."),
        Stage("block", "Encoder block", "One encoder block, traced operation by operation (pre-norm)."),
        Stage("output", "Depth & output", "Deeper blocks, the final LayerNorm, and the classification head."),
    ),
    snapshots=(
        Snapshot(1, "Raw input tensor (after preprocessing)", "img_tensor", "input", ("image",), ("B", "Ch", "H", "W"), "normalised_image", {"out": "image"}, figures=("input_image",)),
        Snapshot(2, "Patches (4D view)", "patches_4d", "input", ("patch_embed.patches",), ("B", "N", "Ch", "P", "P"), "patches_reassemble", {"out": "patch_embed.patches", "image": "image"}, figures=("patch_mosaic",)),
        Snapshot(3, "Flattened patches", "patches_flat", "input", ("patch_embed.flat",), ("B", "N", "Ch·P·P"), "flattened", {"out": "patch_embed.flat", "source": "patch_embed.patches"}),
        Snapshot(4, "Patch embeddings", "x_embed", "input", ("patch_embed.embed",), ("B", "N", "C"), "linear_of", {"out": "patch_embed.embed", "x": "patch_embed.flat", "module": "patch_embed.proj"}, figures=("patch_embedding",)),
        Snapshot(5, "Class token (before concatenation)", "cls_tok", "input", ("cls_token",), ("B", "1", "C"), "equals_parameter", {"out": "cls_token", "parameter": "class_token"}),
        Snapshot(6, "Tokens after adding [CLS]", "x_tokens", "input", ("tokens",), ("B", "N1", "C"), "tokens_concat", {"out": "tokens", "cls": "cls_token", "patches": "patch_embed.embed"}),
        Snapshot(7, "After adding positional encoding", "x_pos", "input", ("tokens_pos",), ("B", "N1", "C"), "plus_parameter", {"out": "tokens_pos", "x": "tokens", "parameter": "pos_embedding"}, figures=("pos_similarity",)),
        Snapshot(8, "Block input", "x_in", "block", (f"{_VIT_BLOCK}.input",), ("B", "N1", "C"), "same_tensor", {"out": f"{_VIT_BLOCK}.input", "source": "{block_prev}", "claim": "is what the previous stage handed over"}),
        Snapshot(9, "Q (per head)", "q", "block", (f"{_VIT_BLOCK}.attn.q",), ("B", "h", "N1", "hs"), "linear_heads", {"out": f"{_VIT_BLOCK}.attn.q", "x": f"{_VIT_BLOCK}.ln_1", "module": f"{_VIT_BLOCK}.attn.qkv", "part": 0}),
        Snapshot(10, "K (per head)", "k", "block", (f"{_VIT_BLOCK}.attn.k",), ("B", "h", "N1", "hs"), "linear_heads", {"out": f"{_VIT_BLOCK}.attn.k", "x": f"{_VIT_BLOCK}.ln_1", "module": f"{_VIT_BLOCK}.attn.qkv", "part": 1}),
        Snapshot(11, "V (per head)", "v", "block", (f"{_VIT_BLOCK}.attn.v",), ("B", "h", "N1", "hs"), "linear_heads", {"out": f"{_VIT_BLOCK}.attn.v", "x": f"{_VIT_BLOCK}.ln_1", "module": f"{_VIT_BLOCK}.attn.qkv", "part": 2}),
        Snapshot(12, "Attention scores (pre-softmax)", "attn_scores", "block", (f"{_VIT_BLOCK}.attn.scores",), ("B", "h", "N1", "N1"), "scaled_scores", {"out": f"{_VIT_BLOCK}.attn.scores", "q_heads": f"{_VIT_BLOCK}.attn.q", "k_heads": f"{_VIT_BLOCK}.attn.k"}),
        Snapshot(13, "Attention probabilities", "attn_probs", "block", (f"{_VIT_BLOCK}.attn.probs",), ("B", "h", "N1", "N1"), "softmax_rows", {"out": f"{_VIT_BLOCK}.attn.probs", "scores": f"{_VIT_BLOCK}.attn.scores"}, figures=("attention_heads", "cls_attention")),
        Snapshot(14, "Context per head", "attn_ctx", "block", (f"{_VIT_BLOCK}.attn.context",), ("B", "h", "N1", "hs"), "context_heads", {"out": f"{_VIT_BLOCK}.attn.context", "weights": f"{_VIT_BLOCK}.attn.probs", "v_heads": f"{_VIT_BLOCK}.attn.v"}),
        Snapshot(15, "MHA output (concat + projection)", "attn_out", "block", (f"{_VIT_BLOCK}.attn.out",), ("B", "N1", "C"), "linear_of", {"out": f"{_VIT_BLOCK}.attn.out", "x": f"{_VIT_BLOCK}.attn.concat", "module": f"{_VIT_BLOCK}.attn.proj"}),
        Snapshot(16, "Residual + norm (post-attention)", "ff_in", "block", (f"{_VIT_BLOCK}.ln_2",), ("B", "N1", "C"), "residual_layer_norm", {"out": f"{_VIT_BLOCK}.ln_2", "operands": [f"{_VIT_BLOCK}.input", f"{_VIT_BLOCK}.attn.out"], "module": f"{_VIT_BLOCK}.ln_2"},
                 differs="The seed normalised `x + attn_out` with a LayerNorm and then also used the un-normalised sum nowhere; in the standard pre-norm ViT this LayerNorm (`ln_2`) only feeds the MLP, while the residual stream keeps the raw sum `x + attn_out`. The page shows `ln_2(x + attn_out)`, the MLP's input."),
        Snapshot(17, "FFN hidden (after fc1 + GELU)", "ff_hidden", "block", (f"{_VIT_BLOCK}.mlp.hidden",), ("B", "N1", "M"), "gelu_of_linear", {"out": f"{_VIT_BLOCK}.mlp.hidden", "x": f"{_VIT_BLOCK}.ln_2", "module": f"{_VIT_BLOCK}.mlp.fc1"}),
        Snapshot(18, "FFN output (after fc2)", "ff_out", "block", (f"{_VIT_BLOCK}.mlp.out",), ("B", "N1", "C"), "linear_of", {"out": f"{_VIT_BLOCK}.mlp.out", "x": f"{_VIT_BLOCK}.mlp.hidden", "module": f"{_VIT_BLOCK}.mlp.fc2"}),
        Snapshot(19, "Residual (+ norm) post-MLP", "x_after_mlp", "block", (f"{_VIT_BLOCK}.residual2",), ("B", "N1", "C"), "sum_of", {"out": f"{_VIT_BLOCK}.residual2", "operands": [f"{_VIT_BLOCK}.residual1", f"{_VIT_BLOCK}.mlp.out"]},
                 differs="The seed added the MLP output to the *normalised* `ff_in` and normalised again (`norm3`). In the standard pre-norm ViT the MLP output is added to the un-normalised residual stream `x + attn_out`, and no LayerNorm follows inside the block: the next block's `ln_1` (or the final `ln`, S23) normalises it."),
        Snapshot(20, "Encoder block output", "block_out", "block", (f"{_VIT_BLOCK}.output",), ("B", "N1", "C"), "same_tensor", {"out": f"{_VIT_BLOCK}.output", "source": f"{_VIT_BLOCK}.residual2", "claim": "is the post-MLP residual sum (no norm inside a pre-norm block)"},
                 differs="In the seed this was the output of an extra LayerNorm; in the standard ViT the block ends with the residual sum of S19."),
        Snapshot(21, "Encoder block 2 output", "x_block2_out", "output", ("{block2}.output",), ("B", "N1", "C"), "residual_block", {"out": "{block2}.output", "x": "{block2}.input", "block": "{block2}"}),
        Snapshot(22, "Encoder block N (last) output", "x_last", "output", ("{block_last}.output",), ("B", "N1", "C"), "residual_block", {"out": "{block_last}.output", "x": "{block_last}.input", "block": "{block_last}"}),
        Snapshot(23, "Final sequence (incl. [CLS])", "final_seq", "output", ("final_seq",), ("B", "N1", "C"), "layer_norm_of", {"out": "final_seq", "x": "{block_last}.output", "module": "ln"},
                 differs="The seed's model had no final LayerNorm after the last block; ViT-B/16 (paper and torchvision) applies one (`ln`) before the head, so S23 is `ln(S22)`."),
        Snapshot(24, "Class token (final representation)", "cls_rep", "output", ("cls_rep",), ("B", "C"), "row_equals", {"out": "cls_rep", "source": "final_seq", "row": 0, "claim": "is row 0 ([CLS]) of the final sequence"}),
        Snapshot(25, "Logits", "logits", "output", ("logits",), ("B", "K"), "linear_of", {"out": "logits", "x": "cls_rep", "module": "head"}, figures=("top5",)),
        Snapshot(26, "Softmax probabilities", "probs", "output", ("probs",), ("B", "K"), "probabilities", {"out": "probs", "logits": "logits"}, figures=("top5",)),
    ),
    figures=(
        Figure("input_image", "input_image", "The input image as loaded (left) and after resizing and normalisation (right), with the patch grid.", {"tensor": "image"}),
        Figure("patch_mosaic", "patch_mosaic", "Every patch of the preprocessed image, in the order the model reads them (row by row).", {"tensor": "patch_embed.patches"}),
        Figure("patch_embedding", "matrix", "Patch-embedding matrix: one row per patch, one column per feature (first 96 of C shown).", {"tensor": "patch_embed.embed", "max_cols": 96, "xlabel": "feature", "ylabel": "patch", "cmap": "RdBu_r"}),
        Figure("pos_similarity", "pos_similarity", "Cosine similarity between position embeddings: the full matrix (left) and, for a few patches, the similarity to every other patch as a grid.", {"parameter": "pos_embedding"}),
        Figure("attention_heads", "attention_heads", "Attention probabilities of every head of the traced block (all tokens; row = query, column = key; with many tokens the colour scale stops at the 99.5th percentile).", {"tensor": f"{_VIT_BLOCK}.attn.probs"}),
        Figure("cls_attention", "cls_attention", "Where the [CLS] token looks: its attention over the patches, per head, laid over the image.", {"tensor": f"{_VIT_BLOCK}.attn.probs", "image_tensor": "image"}),
        Figure("top5", "top5", "The five most probable classes.", {"tensor": "probs"}),
    ),
    overview_figures=("input_image", "cls_attention", "top5"),
    also_record=("{block}.residual1",),
)

REPORTS: dict[str, Report] = {r.key: r for r in (ENCODER_DECODER, VIT)}
