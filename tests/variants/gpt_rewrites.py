"""Rewrites of bases/gpt.py, nanoGPT's modules with its manual attention: a fused q/k/v nn.Linear, the causal mask a
registered 0/1 buffer sliced to (1, 1, T, T), pre-norm blocks, learned positions (see rewrites.py for what a rewrite
is)."""

from __future__ import annotations

from tests.variants.rewrites import Bug, Rewrite

SPLIT = "        qkv = self.c_attn(x)  # BREAKPOINT G07\n        q, k, v = qkv.split(C, dim=2)\n"
SCORES = "        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # BREAKPOINT G11\n"
MASK = "        mask = self.bias[:, :, :T, :T]  # BREAKPOINT G12\n"
FILL = 'att = att.masked_fill(mask == 0, float("-inf"))'
ATTENTION = (SCORES + MASK + f"        {FILL}  # BREAKPOINT G13\n"
             "        att = F.softmax(att, dim=-1)  # BREAKPOINT G14\n"
             "        att = self.attn_dropout(att)\n"
             "        y = att @ v  # BREAKPOINT G15\n")
ATTENTION_CLASS = "class CausalSelfAttention(nn.Module):\n"


def projections_of_class(name: str, definition: str, says: str, only_fused: bool = False) -> Rewrite:
    """Every nn.Linear of the blocks (or only the fused q/k/v one) made an instance of a class of the script's own."""
    linears = [("self.c_attn = nn.Linear(WIDTH, 3 * WIDTH)", f"self.c_attn = {name}(WIDTH, 3 * WIDTH)")]
    if not only_fused:
        linears += [("self.c_proj = nn.Linear(WIDTH, WIDTH)", f"self.c_proj = {name}(WIDTH, WIDTH)"),
                    ("self.c_fc = nn.Linear(WIDTH, 4 * WIDTH)", f"self.c_fc = {name}(WIDTH, 4 * WIDTH)"),
                    ("self.c_proj = nn.Linear(4 * WIDTH, WIDTH)", f"self.c_proj = {name}(4 * WIDTH, WIDTH)")]
    return Rewrite(f"own class {name}", says, ((ATTENTION_CLASS, definition + "\n\n" + ATTENTION_CLASS), *linears))


CONV1D = projections_of_class("Conv1D", '''class Conv1D(nn.Module):
    """GPT-2's projection: the weight stored (in, out), applied by addmm on a (B·T, C) view."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(0.02 * torch.randn(n_in, n_out))
        self.bias = nn.Parameter(0.02 * torch.randn(n_out))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.weight.size(-1),)
        return torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight).view(size_out)
''', "GPT-2's Conv1D (weight (in, out), addmm) for every nn.Linear of the blocks")
TENSORDOT = projections_of_class("Dense", '''class Dense(nn.Module):
    """A projection of the script's own, parameters named as Keras names them."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.kernel = nn.Parameter(0.02 * torch.randn(n_in, n_out))
        self.offset = nn.Parameter(0.02 * torch.randn(n_out))

    def forward(self, x):
        return torch.tensordot(x, self.kernel, dims=1) + self.offset
''', "a tensordot layer of the script's own, its parameters named kernel and offset, for the fused projection",
    only_fused=True)

SEPARATE_QKV = Rewrite("separate q, k, v projections", "three nn.Linear for one fused c_attn (G07 not marked)", (
    ("self.c_attn = nn.Linear(WIDTH, 3 * WIDTH)",
     "self.q_proj, self.k_proj, self.v_proj = (nn.Linear(WIDTH, WIDTH) for _ in range(3))"),
    (SPLIT, "        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)\n")))

MASK_1E9 = Rewrite("mask filled with −1e9", "the scores filled with a finite −1e9", (
    (FILL, FILL.replace('float("-inf")', "-1e9")),))
MASK_FINFO_MIN = Rewrite("mask filled with finfo.min", "the scores filled with the dtype's lowest value", (
    (FILL, FILL.replace('float("-inf")', "torch.finfo(att.dtype).min")),))
ADDITIVE_MASK = Rewrite("additive mask", "a (T, T) float mask of 0 and −inf, added to the scores", (
    (MASK, "        mask = torch.zeros(T, T).masked_fill(self.bias[0, 0, :T, :T] == 0, float(\"-inf\"))"
           "  # BREAKPOINT G12\n"),
    (FILL, "att = att + mask")))
BOOL_MASK = Rewrite("boolean mask (T, T)", "torch.tril of booleans (True = may attend), the scores filled where it is "
                    "False", (
    (MASK, "        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))  # BREAKPOINT G12\n"),
    (FILL, 'att = att.masked_fill(~mask, float("-inf"))')))
SDPA = Rewrite("fused attention (SDPA)", "F.scaled_dot_product_attention(..., is_causal=True): no scores or "
               "probabilities exist to mark", (
    (ATTENTION, "        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # BREAKPOINT G15\n"),))
BMM_HEADS_IN_BATCH = Rewrite("bmm, heads folded into the batch", "scores, masked scores, probabilities of shape "
                             "(B·h, T, T) by torch.bmm, the mask (1, T, T)", (
    (SCORES, "        qf, kf, vf = (t.reshape(B * self.n_head, T, -1) for t in (q, k, v))\n"
             "        att = torch.bmm(qf, kf.transpose(1, 2)) * (1.0 / math.sqrt(k.size(-1)))  # BREAKPOINT G11\n"),
    (MASK, "        mask = self.bias[0, :, :T, :T]  # BREAKPOINT G12\n"),
    ("        y = att @ v  # BREAKPOINT G15\n",
     "        y = torch.bmm(att, vf).view(B, self.n_head, T, -1)  # BREAKPOINT G15\n")))
SCALE_Q_OWN_LINE = Rewrite("q scaled on its own line", "q multiplied by 1/√hs on a line of its own after G08 was "
                           "captured, then the plain product", (
    (SCORES, "        q = q * k.size(-1) ** -0.5\n        att = q @ k.transpose(-2, -1)  # BREAKPOINT G11\n"),))

BLOCK = ("        h = self.ln_1(x)  # BREAKPOINT G06\n"
         "        x = x + self.attn(h)  # BREAKPOINT G18\n"
         "        h = self.ln_2(x)  # BREAKPOINT G19\n"
         "        x = x + self.mlp(h)  # BREAKPOINT G23\n"
         "        return x\n")
POST_NORM = Rewrite("post-norm", "each LayerNorm after its residual sum (GPT-1, BERT): G19 = ln_1(G18), G24 = "
                    "ln_2(G23)", (
    (BLOCK, "        x = x + self.attn(x)  # BREAKPOINT G18\n"
            "        h = self.ln_1(x)  # BREAKPOINT G19\n"
            "        x = h + self.mlp(h)  # BREAKPOINT G23\n"
            "        return self.ln_2(x)\n"),))
RMS_NORM = Rewrite("RMSNorm", "nn.RMSNorm for each nn.LayerNorm (LLaMA)", (
    ("self.ln_1 = nn.LayerNorm(WIDTH)", "self.ln_1 = nn.RMSNorm(WIDTH)"),
    ("self.ln_2 = nn.LayerNorm(WIDTH)", "self.ln_2 = nn.RMSNorm(WIDTH)"),
    ("ln_f=nn.LayerNorm(WIDTH)", "ln_f=nn.RMSNorm(WIDTH)")))
SINUSOID_POSITIONS = Rewrite("fixed sinusoid positions", "a registered sinusoid table, interleaved, for nn.Embedding "
                             "positions", (
    ("            wpe=nn.Embedding(BLOCK_SIZE, WIDTH),\n", ""),
    ("        self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)\n",
     "        self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)\n"
     "        angle = torch.arange(BLOCK_SIZE)[:, None] / 10000 ** (torch.arange(0, WIDTH, 2) / WIDTH)\n"
     "        self.register_buffer(\"pe\", torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1))\n"),
    ("pos_emb = self.transformer.wpe(pos)", "pos_emb = self.pe[pos]")))
FLOAT16 = Rewrite("float16", "the model's parameters and buffers in float16 (.half())", (
    ("model = GPT().eval()", "model = GPT().eval().half()"),))
AUTOCAST = Rewrite("bfloat16 autocast", "the forward pass under torch.autocast(bfloat16): projections in bfloat16, "
                   "the rest in float32", (
    ("with torch.no_grad():", 'with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):'),))
TRAIN_MODE = Rewrite("train mode with dropout", "every dropout active (p = 0.1) in .train(), as in a training step", (
    ("DROPOUT = 16, 256, 2, 3, 24, 0.0", "DROPOUT = 16, 256, 2, 3, 24, 0.1"),
    ("model = GPT().eval()", "model = GPT().train()")))

OWN_LAYER_NORM = Rewrite("own LayerNorm class", "nanoGPT's LayerNorm class (weight, optional bias, F.layer_norm) "
                         "for nn.LayerNorm", (
    (ATTENTION_CLASS, '''class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (nanoGPT's)."""

    def __init__(self, ndim, bias=True):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(ndim))
        self.bias = nn.Parameter(0.1 * torch.randn(ndim)) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


''' + ATTENTION_CLASS),
    ("self.ln_1 = nn.LayerNorm(WIDTH)", "self.ln_1 = LayerNorm(WIDTH)"),
    ("self.ln_2 = nn.LayerNorm(WIDTH)", "self.ln_2 = LayerNorm(WIDTH)"),
    ("ln_f=nn.LayerNorm(WIDTH)", "ln_f=LayerNorm(WIDTH)")))

# GPT-2's split_heads(key, k=True): K kept (B, h, hs, T), already transposed for the product; with 8 bytes a row T = hs,
# so its shape cannot tell it from (B, h, T, hs): the run's numbers must (trace/reading/stored_transposed.py)
KEYS_TRANSPOSED_SCORES = "        att = (q @ k) * (1.0 / math.sqrt(q.size(-1)))  # BREAKPOINT G11\n"
KEYS_TRANSPOSED = Rewrite("keys stored transposed, T = hs", "K split straight into (B, h, hs, T) as GPT-2's "
                          "split_heads(k=True) does, the scores q @ k, with T = hs = 8", (
    ("k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)",
     "k = k.view(B, T, self.n_head, C // self.n_head).permute(0, 2, 3, 1)"),
    (SCORES, KEYS_TRANSPOSED_SCORES),
    ('[list(b"Hello!"), list(b"world.")]', '[list(b"Hello!!!"), list(b"world...")]')))

# Primer's squared ReLU (modded-nanogpt's F.relu(x).square()): relu(x)·x exactly, so it must not read as a gated
# layer whose gate multiplies its own factor (round twenty-three's false red at G21)
RELU_SQUARED = Rewrite("squared ReLU", "the MLP's activation F.relu(x).square() (Primer) for GELU", (
    ("        x = self.gelu(x)  # BREAKPOINT G21\n", "        x = F.relu(x).square()  # BREAKPOINT G21\n"),))

CORRECT = (SEPARATE_QKV, CONV1D, TENSORDOT, MASK_1E9, MASK_FINFO_MIN, ADDITIVE_MASK, BOOL_MASK, SDPA,
           BMM_HEADS_IN_BATCH, SCALE_Q_OWN_LINE, POST_NORM, RMS_NORM, SINUSOID_POSITIONS, FLOAT16, AUTOCAST,
           TRAIN_MODE, OWN_LAYER_NORM, KEYS_TRANSPOSED, RELU_SQUARED)
COMPOSED = ((CONV1D, POST_NORM, BOOL_MASK), (TRAIN_MODE, MASK_1E9, RMS_NORM))

Q_K_SWAPPED = Bug("q and k swapped in the split", "the fused projection's first slice taken as k, the second as q", (
    ("q, k, v = qkv.split(C, dim=2)", "k, q, v = qkv.split(C, dim=2)"),),
    first="G08", form="another part of the projection")
MASK_SEES_NEXT = Bug("mask lets a position see the next", "the buffer's triangle one diagonal too high", (
    ("torch.tril(torch.ones(BLOCK_SIZE, BLOCK_SIZE))", "torch.tril(torch.ones(BLOCK_SIZE, BLOCK_SIZE), diagonal=1)"),),
    first="G12", form="no query attends to a later key")
NO_SCALE = Bug("1/√hs left out", "the scores without their 1/√hs", (
    (SCORES, "        att = q @ k.transpose(-2, -1)  # BREAKPOINT G11\n"),), first="G11", form="1/√d missing")
SOFTMAX_WRONG_AXIS = Bug("softmax over the queries", "the softmax over dim=-2", (
    ("att = F.softmax(att, dim=-1)", "att = F.softmax(att, dim=-2)"),), first="G14", form="softmax over the wrong axis")
RESIDUAL_DROPPED = Bug("residual dropped after the MLP", "x = mlp(ln_2(x)) instead of x + mlp(ln_2(x))", (
    ("x = x + self.mlp(h)", "x = self.mlp(h)"),), first="G23", form="residual dropped")
HEADS_MERGED_UNMOVED = Bug("heads merged without moving the axis back", "(B, h, T, hs) viewed as (B, T, C) without "
                           "the transpose", (
    ("y = y.transpose(1, 2).contiguous().view(B, T, C)", "y = y.contiguous().view(B, T, C)"),),
    first="G16", form="heads merged without moving the axis back")
NORM_OF_WRONG_TENSOR = Bug("ln_2 of ln_1's output", "the MLP's LayerNorm applied to the attention's input, not to the "
                           "residual sum", (
    ("        h = self.ln_2(x)  # BREAKPOINT G19\n", "        h = self.ln_2(h)  # BREAKPOINT G19\n"),),
    first="G19", form="computed from another tensor")
FINITE_MASK_SEES_NEXT = Bug("−1e9 mask lets a position see the next", MASK_SEES_NEXT.says, MASK_SEES_NEXT.edits,
                            first="G12", form="no query attends to a later key")
GAIN_BIAS_SWAPPED = Bug("gain and bias swapped", "the own LayerNorm class called with its bias as the gain and "
                        "its weight as the bias", (
    ("F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)",
     "F.layer_norm(input, self.weight.shape, self.bias, self.weight, 1e-5)"),),
    first="G06", form="gain and bias swapped")

NO_SCALE_KEYS_TRANSPOSED = Bug("1/√hs left out (keys stored transposed)", NO_SCALE.says, (
    (KEYS_TRANSPOSED_SCORES, "        att = q @ k  # BREAKPOINT G11\n"),), first="G11", form="1/√d missing")
K_FROM_V = Bug("k taken from the v slice", "the fused projection's third slice taken as k", (
    ("q, k, v = qkv.split(C, dim=2)", "q, _, v = qkv.split(C, dim=2)\n        k = v"),),
    first="G09", form="another part of the projection")

BUGS = (Q_K_SWAPPED, MASK_SEES_NEXT, NO_SCALE, SOFTMAX_WRONG_AXIS, RESIDUAL_DROPPED, HEADS_MERGED_UNMOVED,
        NORM_OF_WRONG_TENSOR)
BUGS_IN_VARIANTS = ((CONV1D, Q_K_SWAPPED), (TENSORDOT, Q_K_SWAPPED), (MASK_1E9, FINITE_MASK_SEES_NEXT),
                    (TRAIN_MODE, RESIDUAL_DROPPED), (BMM_HEADS_IN_BATCH, SOFTMAX_WRONG_AXIS),
                    (OWN_LAYER_NORM, GAIN_BIAS_SWAPPED), (KEYS_TRANSPOSED, NO_SCALE_KEYS_TRANSPOSED),
                    (KEYS_TRANSPOSED, K_FROM_V))
