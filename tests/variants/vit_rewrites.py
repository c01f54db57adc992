"""Rewrites of the vit base (shrunk.py), the pre-norm ViT in plain functions (see rewrites.py for what a rewrite is)."""

from __future__ import annotations

from tests.variants.rewrites import Bug, Rewrite

SCORES = "    attn_scores = q @ k.transpose(-2, -1) / math.sqrt(C // HEADS)\n"
CONTEXT = "    attn_ctx = attn_probs @ v  # (B, h, N, hs)\n"
SOFTMAX = "attn_probs = attn_scores.softmax(dim=-1)"

EINSUM = Rewrite("einsum", "scores and context by torch.einsum instead of @", (
    (SCORES, '    attn_scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(C // HEADS)\n'),
    (CONTEXT, '    attn_ctx = torch.einsum("bhqk,bhkd->bhqd", attn_probs, v)\n')))

SCALE_ON_Q = Rewrite("scale on q", "the 1/√hs applied to q inside the product, (q·s)·Kᵀ, as timm does", (
    (SCORES, "    attn_scores = (q * (C // HEADS) ** -0.5) @ k.transpose(-2, -1)\n"),))

BMM_HEADS_IN_BATCH = Rewrite(
    "bmm, heads folded into the batch", "scores, probabilities by torch.bmm on (B·h, N, hs) views: S12 and S13 are "
    "(B·h, N, N), the context viewed back to (B, h, N, hs)", (
        (SCORES, "    qf, kf, vf = (t.reshape(B * HEADS, N, C // HEADS) for t in (q, k, v))\n"
                 "    attn_scores = torch.bmm(qf, kf.transpose(1, 2)) / math.sqrt(C // HEADS)\n"),
        (CONTEXT, "    attn_ctx = torch.bmm(attn_probs, vf).view(B, HEADS, N, C // HEADS)\n")))

SEPARATE_QKV = Rewrite("separate q, k, v projections", "three projections, each on its own marked line, for one "
                       "fused projection split in three", (
    ('        "qkv": linear_params(WIDTH, 3 * WIDTH),\n',
     '        "q": linear_params(WIDTH, WIDTH), "k": linear_params(WIDTH, WIDTH), "v": linear_params(WIDTH, WIDTH),\n'),
    ('    qkv = linear(layer_norm(x_in, p["ln1"]), p["qkv"])  # (B, N, 3C)\n'
     '    qkv = qkv.reshape(B, N, 3, HEADS, C // HEADS).permute(2, 0, 3, 1, 4)  # (3, B, h, N, hs)\n'
     '    q, k, v = qkv[0], qkv[1], qkv[2]  # BREAKPOINT S09, S10, S11\n',
     '    h = layer_norm(x_in, p["ln1"])\n'
     '    q = linear(h, p["q"]).reshape(B, N, HEADS, C // HEADS).transpose(1, 2)  # BREAKPOINT S09\n'
     '    k = linear(h, p["k"]).reshape(B, N, HEADS, C // HEADS).transpose(1, 2)  # BREAKPOINT S10\n'
     '    v = linear(h, p["v"]).reshape(B, N, HEADS, C // HEADS).transpose(1, 2)  # BREAKPOINT S11\n')))

POST_NORM = Rewrite("post-norm", "the original Transformer's order: LayerNorm after each residual sum (S16 = "
                    "LN(x + attention), S20 = LN(S19)), the attention reading the block input itself", (
    ('qkv = linear(layer_norm(x_in, p["ln1"]), p["qkv"])', 'qkv = linear(x_in, p["qkv"])'),
    ('    x_after_attn = x_in + attn_out\n    ff_in = layer_norm(x_after_attn, p["ln2"])\n',
     '    x_after_attn = layer_norm(x_in + attn_out, p["ln1"])\n    ff_in = x_after_attn\n'),
    ("    block_out = x_after_mlp\n", '    block_out = layer_norm(x_after_mlp, p["ln2"])\n')))

PATCH_POSITIONS = "    pos_embed = 0.02 * torch.randn(1, n_patches + 1, WIDTH)\n"
SINUSOID_POSITIONS = Rewrite("fixed sinusoid positions", "a fixed table, sin half then cos half, for learned "
                             "positions", (
    (PATCH_POSITIONS, "    position = torch.arange(n_patches + 1)[:, None]\n"
                      "    angle = position / 10000 ** (torch.arange(0, WIDTH, 2) / WIDTH)\n"
                      "    pos_embed = torch.cat([angle.sin(), angle.cos()], dim=-1)[None]\n"),))

TOKENS = ("    x_tokens = torch.cat([cls_tok, x_embed], dim=1)  # (B, 1 + N, D)\n"
          "    # BREAKPOINT S06 - Embeddings AFTER adding the class token\n"
          "    x_pos = x_tokens + pos_embed\n"
          "    # BREAKPOINT S07 - Embeddings AFTER adding positional encoding\n")
POSITIONS_BEFORE_CLASS_TOKEN = Rewrite(
    "positions before the class token", "positions added to the patches, then the class token (without one) "
    "prepended: S07 before S06, as several public ViTs do", (
        (PATCH_POSITIONS, "    pos_embed = 0.02 * torch.randn(1, n_patches, WIDTH)\n"),
        (TOKENS, "    x_pos = x_embed + pos_embed\n"
                 "    # BREAKPOINT S07 - Embeddings AFTER adding positional encoding\n"
                 "    x_tokens = torch.cat([cls_tok, x_pos], dim=1)  # (B, 1 + N, D)\n"
                 "    # BREAKPOINT S06 - Embeddings AFTER adding the class token\n"),
        ("encoder_block(x_pos, blocks[0])", "encoder_block(x_tokens, blocks[0])")))

# DeiT's distillation token: a second learned token after the class token, T = 1 + 1 + N (the joint reading's extra
# tokens), and the positions added after the class token joined; or added to the patches before it joined, with a
# table of one row per patch (timm's no_embed_class): S07 holds the patches alone
DISTILLATION_TOKEN = Rewrite("distillation token", "a learned distillation token after the class token (DeiT): "
                             "N1 = 1 + 1 + N tokens, the position table one row longer", (
    (PATCH_POSITIONS, "    pos_embed = 0.02 * torch.randn(1, n_patches + 2, WIDTH)\n"
                      "    dist_token = 0.02 * torch.randn(1, 1, WIDTH)\n"),
    ("torch.cat([cls_tok, x_embed], dim=1)", "torch.cat([cls_tok, dist_token.expand(B, -1, -1), x_embed], dim=1)")))

CLASS_TOKEN_LAST = Rewrite("class token last", "the class token appended after the patches and pooled from the last "
                           "row", (
    ("torch.cat([cls_tok, x_embed], dim=1)", "torch.cat([x_embed, cls_tok], dim=1)"),
    ("cls_rep = final_seq[:, 0, :]", "cls_rep = final_seq[:, -1, :]")))

LAYER_SCALE = Rewrite("LayerScale", "each sublayer's output times a learned per-channel gain before the residual sum "
                      "(CaiT, DINOv2)", (
    ('        "fc2": linear_params(MLP, WIDTH),\n',
     '        "fc2": linear_params(MLP, WIDTH),\n'
     '        "gamma1": 0.1 + 0.02 * torch.randn(WIDTH), "gamma2": 0.1 + 0.02 * torch.randn(WIDTH),\n'),
    ("x_after_attn = x_in + attn_out", 'x_after_attn = x_in + p["gamma1"] * attn_out'),
    ("x_after_mlp = x_after_attn + ff_out", 'x_after_mlp = x_after_attn + p["gamma2"] * ff_out')))

MEAN_POOLING = Rewrite("mean pooling", "the mean over the tokens as the image's representation instead of the class "
                       "token's row", (("cls_rep = final_seq[:, 0, :]", "cls_rep = final_seq.mean(dim=1)"),))

NORM_AND_PICK = Rewrite("norm and class-token pick on one line", "the final LayerNorm and the row-0 pick in one "
                        "statement, S23 no longer a variable", (
    ("    final_seq = layer_norm(x_last, final_norm)\n"
     "    # BREAKPOINT S23 - Final sequence output (including class token)\n"
     "    cls_rep = final_seq[:, 0, :]  # (B, D)\n",
     "    cls_rep = layer_norm(x_last, final_norm)[:, 0]  # (B, D)\n"),))

LAYER_NORM = "    return F.layer_norm(x, (x.shape[-1],), gain, bias)\n"
RMS_NORM = Rewrite("RMSNorm", "F.rms_norm (gain, no bias) wherever the catalogue says LayerNorm", (
    (LAYER_NORM, "    return F.rms_norm(x, (x.shape[-1],), gain, eps=1e-6)\n"),))
LAYER_NORM_EPS = Rewrite("LayerNorm ε 1e-6", "every LayerNorm with ε = 1e-6 (timm's) instead of 1e-5", (
    (LAYER_NORM, "    return F.layer_norm(x, (x.shape[-1],), gain, bias, eps=1e-6)\n"),))

BFLOAT16 = Rewrite("bfloat16", "the whole model and its input in bfloat16 (torch.set_default_dtype)", (
    ("    torch.manual_seed(0)\n", "    torch.manual_seed(0)\n    torch.set_default_dtype(torch.bfloat16)\n"),))

TRAIN_MODE = Rewrite("train mode with dropout", "dropout (p = 0.1, active) after the positions and on the MLP's "
                     "output, as a training step runs it", (
    ("    x_pos = x_tokens + pos_embed\n", "    x_pos = F.dropout(x_tokens + pos_embed, p=0.1, training=True)\n"),
    ('    ff_out = linear(ff_hidden, p["fc2"])\n',
     '    ff_out = F.dropout(linear(ff_hidden, p["fc2"]), p=0.1, training=True)\n')))

SEQUENCE_FIRST = Rewrite("sequence-first", "every activation from the patch embeddings on (N, B, C), the class token "
                         "picked as final_seq[0]", (
    ("x_embed = linear(patches_flat, patch_embed)  # (B, N, D)",
     "x_embed = linear(patches_flat, patch_embed).transpose(0, 1)  # (N, B, D)"),
    ("cls_tok = cls_token.expand(B, -1, -1)  # (B, 1, D)", "cls_tok = cls_token.expand(1, B, -1)  # (1, B, D)"),
    ("torch.cat([cls_tok, x_embed], dim=1)", "torch.cat([cls_tok, x_embed], dim=0)"),
    ("    x_pos = x_tokens + pos_embed\n", "    x_pos = x_tokens + pos_embed.transpose(0, 1)\n"),
    ("    B, N, C = x_in.shape\n", "    N, B, C = x_in.shape\n"),
    ("qkv.reshape(B, N, 3, HEADS, C // HEADS).permute(2, 0, 3, 1, 4)",
     "qkv.reshape(N, B, 3, HEADS, C // HEADS).permute(2, 1, 3, 0, 4)"),
    ("attn_ctx.transpose(1, 2).reshape(B, N, C)", "attn_ctx.permute(2, 0, 1, 3).reshape(N, B, C)"),
    ("cls_rep = final_seq[:, 0, :]", "cls_rep = final_seq[0]")))

# CLIP's patch embedding: the convolution on an unmarked line, its (B, D, N) output moved to (B, N, D) on S04's line;
# S04 is judged from the tensor that line read (trace/reading/patch_grid.py)
CONV_GRID = "    x_embed = maps.permute(0, 2, 1)  # (B, N, D)\n"
CONV_UNMARKED = Rewrite("patch convolution on an unmarked line", "F.conv2d on an unmarked line, its output reshaped "
                        "to (B, D, N) and permuted to (B, N, D) at S04, S03 not marked", (
    ("    patches_flat = patches_4d.flatten(2)  # (B, N, C·P·P)\n    # BREAKPOINT S03 - Flattened patches\n"
     "    x_embed = linear(patches_flat, patch_embed)  # (B, N, D)\n",
     "    kernel = patch_embed[0].t().reshape(WIDTH, C, PATCH, PATCH)\n"
     "    maps = F.conv2d(img_tensor, kernel, patch_embed[1], stride=PATCH)\n"
     "    maps = maps.reshape(B, WIDTH, -1)  # (B, D, N)\n" + CONV_GRID),))

CORRECT = (EINSUM, SCALE_ON_Q, BMM_HEADS_IN_BATCH, SEPARATE_QKV, POST_NORM, SINUSOID_POSITIONS,
           POSITIONS_BEFORE_CLASS_TOKEN, CLASS_TOKEN_LAST, LAYER_SCALE, MEAN_POOLING, NORM_AND_PICK, RMS_NORM,
           LAYER_NORM_EPS, BFLOAT16, TRAIN_MODE, SEQUENCE_FIRST, CONV_UNMARKED, DISTILLATION_TOKEN)

SOFTMAX_WRONG_AXIS = Bug("softmax over the queries", "the softmax over dim=-2, so columns sum to 1, not rows", (
    (SOFTMAX, "attn_probs = attn_scores.softmax(dim=-2)"),), first="S13", form="softmax over the wrong axis")
NO_SCALE = Bug("1/√hs left out", "the scores without their 1/√hs", (
    (SCORES, "    attn_scores = q @ k.transpose(-2, -1)\n"),), first="S12", form="1/√d missing")
RESIDUAL_DROPPED = Bug("residual dropped after the MLP", "x = mlp(x) instead of x = x + mlp(x)", (
    ("x_after_mlp = x_after_attn + ff_out", "x_after_mlp = ff_out"),), first="S19", form="residual dropped")
HEADS_MERGED_UNMOVED = Bug("heads merged without moving the axis back", "(B, h, N, hs) reshaped to (B, N, C) without "
                           "the transpose", (
    ("attn_ctx.transpose(1, 2).reshape(B, N, C)", "attn_ctx.reshape(B, N, C)"),),
    first="S15", form="heads merged without moving the axis back")
WRONG_TOKEN = Bug("the wrong token pooled", "row 1 (the first patch) pooled instead of the class token's row 0", (
    ("cls_rep = final_seq[:, 0, :]", "cls_rep = final_seq[:, 1, :]"),), first="S24", form="the wrong token pooled")
# A learned table that no snapshot shows, added twice, is a table twice as large: only a known table (the sinusoid)
# tells the bug from a correct form.
POSITIONS_TWICE = Bug("positions added twice", "the sinusoid table added two times", (
    ("    x_pos = x_tokens + pos_embed\n", "    x_pos = x_tokens + pos_embed + pos_embed\n"),),
    first="S07", form="positions added twice")
# the sum's other operand left out: named by the form of a sum with an operand dropped, whose message names which
NORM_OF_WRONG_TENSOR = Bug("LayerNorm of the block input", "ln2 applied to the block's input, not to x + attention: "
                           "the attention's output left out", (
    ('ff_in = layer_norm(x_after_attn, p["ln2"])', 'ff_in = layer_norm(x_in, p["ln2"])'),),
    first="S16", form="residual dropped")
EINSUM_NO_SCALE = Bug("1/√hs left out of the einsum", "the einsum's scores without their 1/√hs", (
    ('torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(C // HEADS)', 'torch.einsum("bhqd,bhkd->bhqk", q, k)'),),
    first="S12", form="1/√d missing")
BMM_SOFTMAX_WRONG_AXIS = Bug("softmax over the queries of (B·h, N, N)", "dim=1 of the folded scores: the queries", (
    (SOFTMAX, "attn_probs = attn_scores.softmax(dim=1)"),), first="S13", form="softmax over the wrong axis")
PIXEL_ORDER = Bug("patches read transposed", "each patch's pixels read column by column (the last two axes "
                  "swapped)", (("grid.permute(0, 2, 3, 1, 4, 5)", "grid.permute(0, 2, 3, 1, 5, 4)"),),
                  first="S02", form="patches read in another pixel order")
SEQUENCE_FIRST_WRONG_TOKEN = Bug("the wrong token pooled", "row 1 of the sequence-first final sequence pooled", (
    ("cls_rep = final_seq[0]", "cls_rep = final_seq[1]"),), first="S24", form="the wrong token pooled")

GRID_RESHAPED = Bug("patch grid reshaped", "the convolution's (B, D, N) output reshaped to (B, N, D) instead of "
                    "permuted", ((CONV_GRID, "    x_embed = maps.reshape(B, -1, WIDTH)  # (B, N, D)\n"),),
                    first="S04", form="patch grid reshaped instead of permuted")

DISTILLATION_TOKEN_POOLED = Bug("the distillation token pooled", "row 1 (the distillation token) pooled instead of "
                                "the class token's row 0", (("cls_rep = final_seq[:, 0, :]",
                                                             "cls_rep = final_seq[:, 1, :]"),),
                                first="S24", form="the wrong token pooled")

BUGS = (SOFTMAX_WRONG_AXIS, NO_SCALE, RESIDUAL_DROPPED, HEADS_MERGED_UNMOVED, WRONG_TOKEN, NORM_OF_WRONG_TENSOR,
        PIXEL_ORDER)
BUGS_IN_VARIANTS = ((EINSUM, EINSUM_NO_SCALE), (SINUSOID_POSITIONS, POSITIONS_TWICE),
                    (BMM_HEADS_IN_BATCH, BMM_SOFTMAX_WRONG_AXIS), (TRAIN_MODE, RESIDUAL_DROPPED),
                    (SEQUENCE_FIRST, SEQUENCE_FIRST_WRONG_TOKEN), (CONV_UNMARKED, GRID_RESHAPED),
                    (DISTILLATION_TOKEN, DISTILLATION_TOKEN_POOLED),
                    (POSITIONS_BEFORE_CLASS_TOKEN, WRONG_TOKEN))
