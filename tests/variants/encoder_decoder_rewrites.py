"""Rewrites of the encoder_decoder base (shrunk.py), the post-norm encoder–decoder in plain functions, batch-first,
with an additive −inf causal mask of shape (1, 1, T, T) (see rewrites.py for what a rewrite is)."""

from __future__ import annotations

from tests.variants.rewrites import Bug, Rewrite

MASK = 'tgt_mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)[None, None]'
MASKED_SOFTMAX = "attn_weights_m = torch.softmax(scores_pre_mask_m + tgt_mask, dim=-1)"


def additive_mask(name: str, value: str, says: str) -> Rewrite:
    return Rewrite(name, says, ((MASK, f"tgt_mask = torch.triu(torch.full((T, T), {value}), diagonal=1)[None, None]"),))


def filled_mask(name: str, mask: str, fill: str, says: str) -> Rewrite:
    """A mask that is not added: the scores filled where ``fill`` (an expression of tgt_mask) holds."""
    return Rewrite(name, says, (
        (MASK, f"tgt_mask = {mask}"),
        (MASKED_SOFTMAX, f"attn_weights_m = torch.softmax(scores_pre_mask_m.masked_fill({fill}), dim=-1)")))


MASK_1E9 = additive_mask("additive mask −1e9", "-1e9", "a finite blocking value, −1e9, added")
MASK_1E10 = additive_mask("additive mask −1e10", "-1e10", "a finite blocking value, −1e10, added")
MASK_FINFO_MIN = filled_mask(
    "mask filled with finfo.min", "torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)[None, None]",
    "tgt_mask, torch.finfo(scores_pre_mask_m.dtype).min", "a boolean mask (True = masked) filled with the dtype's "
    "lowest value, as Hugging Face does")
BOOL_ALLOWED = filled_mask(
    "boolean mask, True = allowed", "torch.tril(torch.ones(T, T, dtype=torch.bool))[None, None]",
    '~tgt_mask, float("-inf")', "a boolean lower triangle (True = may attend), the scores filled with −inf elsewhere")
FLOAT_01 = filled_mask(
    "0/1 mask filled with −1e9", "torch.tril(torch.ones(T, T))[None, None]", "tgt_mask == 0, -1e9",
    "a 0/1 float lower triangle, the scores filled with −1e9 where it is 0, as the Annotated Transformer does")
MASK_AXES = "diagonal=1)[None, None]"
SQUARE_MASK = Rewrite("mask (T, T)", "the mask without its broadcast axes", ((MASK_AXES, "diagonal=1)"),))
MASK_PER_ITEM = Rewrite("mask per batch item (B, 1, T, T)", "the mask repeated for each sentence pair", (
    (MASK_AXES, "diagonal=1)[None, None].repeat(len(TARGETS), 1, 1, 1)"),))
MASK_HEADS_IN_BATCH = Rewrite(
    "mask (B·h, T, T), heads folded into the batch", "a mask per item and head as nn.MultiheadAttention takes it, "
    "applied to the scores viewed (B·h, T, T)", (
        (MASK_AXES, "diagonal=1)[None].repeat(len(TARGETS) * N_HEADS, 1, 1)"),
        (MASKED_SOFTMAX, "attn_weights_m = torch.softmax((scores_pre_mask_m.flatten(0, 1) + tgt_mask)"
                         ".view_as(scores_pre_mask_m), dim=-1)")))

POSITIONS = ("    i = torch.arange(width)[None, :]\n"
             "    angle = pos / torch.pow(10000.0, (2 * (i // 2)) / width)\n"
             "    return torch.where(i % 2 == 0, torch.sin(angle), torch.cos(angle))  # (L, C)\n")
SIN_THEN_COS = Rewrite("sin half, then cos half", "the sinusoid table laid out as all sines, then all cosines "
                       "(tensor2tensor's layout) instead of interleaved", (
    (POSITIONS, "    half = torch.arange(width // 2)[None, :]\n"
                "    angle = pos / torch.pow(10000.0, 2 * half / width)\n"
                "    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1)  # (L, C)\n"),))
LEARNED_POSITIONS = Rewrite("learned positions", "a learned table of positions (random here) for the sinusoid", (
    ("    out_proj = torch.randn(D_MODEL, len(tgt_vocab)) / math.sqrt(D_MODEL)\n",
     "    out_proj = torch.randn(D_MODEL, len(tgt_vocab)) / math.sqrt(D_MODEL)\n"
     "    pos_table = 0.1 * torch.randn(16, D_MODEL)\n"),
    ("src_embed + positional_encoding(S, D_MODEL)", "src_embed + pos_table[:S]"),
    ("+ positional_encoding(T, D_MODEL)", "+ pos_table[:T]")))

ENCODER_SCORES = "scores_pre_mask = q_heads @ k_heads.transpose(-2, -1) / math.sqrt(d_head)"
EINSUM = Rewrite("einsum", "the encoder's scores by torch.einsum", (
    (ENCODER_SCORES, 'scores_pre_mask = torch.einsum("bhqd,bhkd->bhqk", q_heads, k_heads) / math.sqrt(d_head)'),))
SCALE_ON_Q = Rewrite("scale on q", "the encoder's 1/√hs applied to q before the product", (
    (ENCODER_SCORES, "scores_pre_mask = (q_heads / math.sqrt(d_head)) @ k_heads.transpose(-2, -1)"),))

SEQUENCE_FIRST = Rewrite("sequence-first", "every activation (L, B, C), as nn.Transformer's default: embeddings "
                         "looked up transposed, positions broadcast over the batch, heads split and merged from "
                         "(L, B, C)", (
    ("src_embed = src_emb[torch.tensor(src_ids)]", "src_embed = src_emb[torch.tensor(src_ids).T]"),
    ("src_embed + positional_encoding(S, D_MODEL)", "src_embed + positional_encoding(S, D_MODEL)[:, None]"),
    ("tgt_emb[torch.tensor(tgt_ids)] + positional_encoding(T, D_MODEL)",
     "tgt_emb[torch.tensor(tgt_ids).T] + positional_encoding(T, D_MODEL)[:, None]"),
    ("    B, L, C = x.shape\n    return x.view(B, L, n_heads, C // n_heads).transpose(1, 2)",
     "    L, B, C = x.shape\n    return x.view(L, B, n_heads, C // n_heads).permute(1, 2, 0, 3)"),
    ("return x.transpose(1, 2).reshape(B, L, h * hs)", "return x.permute(2, 0, 1, 3).reshape(L, B, h * hs)")))

PRE_NORM = Rewrite("pre-norm", "LayerNorm before each sublayer and the plain residual sums x + sublayer(norm(x)) at "
                   "#15, #19, #29, #36, #40, a final LayerNorm after each stack", (
    ('    q = enc_in @ p["sa_W_q"]  # Snapshot #7\n    k = enc_in @ p["sa_W_k"]  # Snapshot #8\n'
     '    v = enc_in @ p["sa_W_v"]  # Snapshot #9\n',
     '    h = layer_norm(enc_in, p["ln1_g"], p["ln1_b"])\n    q = h @ p["sa_W_q"]  # Snapshot #7\n'
     '    k = h @ p["sa_W_k"]  # Snapshot #8\n    v = h @ p["sa_W_v"]  # Snapshot #9\n'),
    ('ln1_out = layer_norm(res1_a + res1_b, p["ln1_g"], p["ln1_b"])', "ln1_out = res1_a + res1_b"),
    ("ff_in = ln1_out  # Snapshot #16", 'ff_in = layer_norm(ln1_out, p["ln2_g"], p["ln2_b"])  # Snapshot #16'),
    ('enc_out = layer_norm(ff_in + ff2, p["ln2_g"], p["ln2_b"])', "enc_out = ln1_out + ff2"),
    ('    q_m = x @ p["sa_W_q"]  # Snapshot #21\n    k_m = x @ p["sa_W_k"]  # Snapshot #22\n'
     '    v_m = x @ p["sa_W_v"]  # Snapshot #23\n',
     '    h = layer_norm(x, p["ln1_g"], p["ln1_b"])\n    q_m = h @ p["sa_W_q"]  # Snapshot #21\n'
     '    k_m = h @ p["sa_W_k"]  # Snapshot #22\n    v_m = h @ p["sa_W_v"]  # Snapshot #23\n'),
    ('after_msa_norm = layer_norm(x + attn_out_m, p["ln1_g"], p["ln1_b"])', "after_msa_norm = x + attn_out_m"),
    ('q_c = after_msa_norm @ p["ca_W_q"]', 'q_c = layer_norm(after_msa_norm, p["ln3_g"], p["ln3_b"]) @ p["ca_W_q"]'),
    ('after_ca_norm = layer_norm(after_msa_norm + attn_out_c, p["ln3_g"], p["ln3_b"])',
     "after_ca_norm = after_msa_norm + attn_out_c"),
    ("ff_in = after_ca_norm  # Snapshot #37",
     'ff_in = layer_norm(after_ca_norm, p["ln2_g"], p["ln2_b"])  # Snapshot #37'),
    ('dec_out = layer_norm(ff_in + ff2, p["ln2_g"], p["ln2_b"])', "dec_out = after_ca_norm + ff2"),
    ("    memory = x\n", "    memory = layer_norm(x, 1.0, 0.0)\n"),
    ("dec_final = y  # Snapshot #41", "dec_final = layer_norm(y, 1.0, 0.0)  # Snapshot #41")))

TRAIN_MODE = Rewrite("train mode with dropout", "dropout (p = 0.1, active) on the encoder's attention weights and on "
                     "its attention output before the residual sum", (
    ("attn_weights = torch.softmax(scores_pre_mask, dim=-1)",
     "attn_weights = torch.dropout(torch.softmax(scores_pre_mask, dim=-1), 0.1, True)"),
    ("res1_a, res1_b = enc_in, attn_out", "res1_a, res1_b = enc_in, torch.dropout(attn_out, 0.1, True)")))
FLOAT16 = Rewrite("float16", "every tensor made in float16 (torch.set_default_dtype), the positions too", (
    ("    torch.manual_seed(7)\n", "    torch.manual_seed(7)\n    torch.set_default_dtype(torch.float16)\n"),
    ("pos = torch.arange(length, dtype=torch.float32)[:, None]",
     "pos = torch.arange(length, dtype=torch.get_default_dtype())[:, None]")))

CORRECT = (MASK_1E9, MASK_1E10, MASK_FINFO_MIN, BOOL_ALLOWED, FLOAT_01, SQUARE_MASK, MASK_PER_ITEM, MASK_HEADS_IN_BATCH,
           SIN_THEN_COS, LEARNED_POSITIONS, EINSUM, SCALE_ON_Q, SEQUENCE_FIRST, PRE_NORM,
           TRAIN_MODE, FLOAT16)
# the sublayer output reaches the residual sum on a line of its own, unmarked (tunz/transformer-pytorch's
# `y = self.self_attention_dropout(y)`, then `x = x + y  # Snapshot #15`): #15 reads it from the line's own locals
OPERANDS_UNMARKED = Rewrite("residual operands unmarked", "#14 not marked: the attention output reaches #15's sum "
                            "only as a local the line reads", (
    ("    res1_a, res1_b = enc_in, attn_out  # Snapshot #14\n", "    res1_a, res1_b = enc_in, attn_out\n"),))
COMPOSED = ((SEQUENCE_FIRST, MASK_1E9, SQUARE_MASK), (PRE_NORM, SIN_THEN_COS, BOOL_ALLOWED),
            (PRE_NORM, OPERANDS_UNMARKED))

MASK_SEES_NEXT = Bug("mask lets a position see the next", "the causal mask's triangle one diagonal too high", (
    (MASK_AXES, "diagonal=2)[None, None]"),), first="#25", form="no query attends to a later key")
NO_SCALE = Bug("1/√hs left out", "the encoder's scores without their 1/√hs", (
    (ENCODER_SCORES, "scores_pre_mask = q_heads @ k_heads.transpose(-2, -1)"),), first="#10", form="1/√d missing")
SOFTMAX_WRONG_AXIS = Bug("softmax over the queries", "the encoder's softmax over dim=-2", (
    ("torch.softmax(scores_pre_mask, dim=-1)", "torch.softmax(scores_pre_mask, dim=-2)"),),
    first="#11", form="softmax over the wrong axis")
RESIDUAL_DROPPED = Bug("residual dropped", "the encoder's first LayerNorm of the attention output alone", (
    ('layer_norm(res1_a + res1_b, p["ln1_g"], p["ln1_b"])', 'layer_norm(res1_b, p["ln1_g"], p["ln1_b"])'),),
    first="#15", form="residual dropped")
HEADS_SPLIT_UNMOVED = Bug("heads split without moving the axis", "(B, L, C) viewed as (B, h, L, hs) directly", (
    ("return x.view(B, L, n_heads, C // n_heads).transpose(1, 2)", "return x.view(B, n_heads, L, C // n_heads)"),),
    first="#12", form="heads split without moving the axis")
HEADS_MERGED_UNMOVED = Bug("heads merged without moving the axis back", "(B, h, L, hs) reshaped to (B, L, C) "
                           "directly", (
    ("return x.transpose(1, 2).reshape(B, L, h * hs)", "return x.reshape(B, L, h * hs)"),),
    first="#13", form="heads merged without moving the axis back")
POSITIONS_TWICE = Bug("positions added twice", "the source's position table added two times", (
    ("src_embed + positional_encoding(S, D_MODEL)",
     "src_embed + positional_encoding(S, D_MODEL) + positional_encoding(S, D_MODEL)"),),
    first="#5", form="positions added twice")
FINITE_MASK_SEES_NEXT = Bug("−1e9 mask lets a position see the next", "the −1e9 mask one diagonal too high", (
    (MASK_AXES, "diagonal=2)[None, None]"),), first="#25", form="no query attends to a later key")
PRE_NORM_RESIDUAL_DROPPED = Bug("residual dropped", "the pre-norm encoder's first residual sum without the stream", (
    ("ln1_out = res1_a + res1_b", "ln1_out = res1_b"),), first="#15", form="residual dropped")
SEQUENCE_FIRST_NO_SCALE = Bug("1/√hs left out", "the encoder's scores without their 1/√hs, sequence-first", (
    (ENCODER_SCORES, "scores_pre_mask = q_heads @ k_heads.transpose(-2, -1)"),), first="#10", form="1/√d missing")

BUGS = (MASK_SEES_NEXT, NO_SCALE, SOFTMAX_WRONG_AXIS, RESIDUAL_DROPPED, HEADS_SPLIT_UNMOVED, HEADS_MERGED_UNMOVED,
        POSITIONS_TWICE)
BUGS_IN_VARIANTS = ((MASK_1E9, FINITE_MASK_SEES_NEXT), (SEQUENCE_FIRST, SEQUENCE_FIRST_NO_SCALE),
                    (PRE_NORM, PRE_NORM_RESIDUAL_DROPPED), (PRE_NORM, OPERANDS_UNMARKED, PRE_NORM_RESIDUAL_DROPPED))
