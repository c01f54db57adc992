"""Base ViT (from examples/vit_trace.py, shrunk): a pre-norm Vision Transformer in plain functions, every snapshot
S01–S26 marked. Sizes chosen so that no two named dimensions are equal (B 2, N 9, N1 10, C 24, h 3, hs 8, MLP 40)."""

import math

import torch
import torch.nn.functional as F

IMAGE_SIZE, PATCH, WIDTH, HEADS, MLP, BLOCKS, CLASSES = 12, 4, 24, 3, 40, 3, 5


def linear_params(n_in, n_out):
    return torch.randn(n_in, n_out) / math.sqrt(n_in), 0.02 * torch.randn(n_out)


def block_params():
    return {
        "ln1": (1.0 + 0.1 * torch.randn(WIDTH), 0.1 * torch.randn(WIDTH)),
        "qkv": linear_params(WIDTH, 3 * WIDTH),
        "proj": linear_params(WIDTH, WIDTH),
        "ln2": (1.0 + 0.1 * torch.randn(WIDTH), 0.1 * torch.randn(WIDTH)),
        "fc1": linear_params(WIDTH, MLP),
        "fc2": linear_params(MLP, WIDTH),
    }


def layer_norm(x, params):
    gain, bias = params
    return F.layer_norm(x, (x.shape[-1],), gain, bias)


def linear(x, params):
    weight, bias = params
    return x @ weight + bias


def encoder_block(x, p):
    x_in = x
    # BREAKPOINT S08 - Encoder block input tensor
    B, N, C = x_in.shape
    qkv = linear(layer_norm(x_in, p["ln1"]), p["qkv"])  # (B, N, 3C)
    qkv = qkv.reshape(B, N, 3, HEADS, C // HEADS).permute(2, 0, 3, 1, 4)  # (3, B, h, N, hs)
    q, k, v = qkv[0], qkv[1], qkv[2]  # BREAKPOINT S09, S10, S11
    attn_scores = q @ k.transpose(-2, -1) / math.sqrt(C // HEADS)
    # BREAKPOINT S12 - Attention scores BEFORE softmax
    attn_probs = attn_scores.softmax(dim=-1)
    # BREAKPOINT S13 - Attention scores AFTER softmax
    attn_ctx = attn_probs @ v  # (B, h, N, hs)
    # BREAKPOINT S14 - Context per head
    attn_out = linear(attn_ctx.transpose(1, 2).reshape(B, N, C), p["proj"])  # (B, N, C)
    # BREAKPOINT S15 - MHA output (concat + projection)
    x_after_attn = x_in + attn_out
    ff_in = layer_norm(x_after_attn, p["ln2"])
    # BREAKPOINT S16 - Residual + norm: the feed-forward input
    ff_hidden = F.gelu(linear(ff_in, p["fc1"]))
    # BREAKPOINT S17 - Feed-forward hidden layer output
    ff_out = linear(ff_hidden, p["fc2"])
    # BREAKPOINT S18 - Feed-forward output
    x_after_mlp = x_after_attn + ff_out
    # BREAKPOINT S19 - Residual post-MLP
    block_out = x_after_mlp
    # BREAKPOINT S20 - Encoder block output
    return block_out


def main():
    torch.manual_seed(0)
    patch_embed = linear_params(3 * PATCH * PATCH, WIDTH)
    cls_token = 0.02 * torch.randn(1, 1, WIDTH)
    n_patches = (IMAGE_SIZE // PATCH) ** 2
    pos_embed = 0.02 * torch.randn(1, n_patches + 1, WIDTH)
    blocks = [block_params() for _ in range(BLOCKS)]
    final_norm = (1.0 + 0.1 * torch.randn(WIDTH), 0.1 * torch.randn(WIDTH))
    head = linear_params(WIDTH, CLASSES)

    img_tensor = torch.randn(2, 3, IMAGE_SIZE, IMAGE_SIZE)
    # BREAKPOINT S01 - Raw input image tensor (after preprocessing)
    B, C, H, W = img_tensor.shape
    grid = img_tensor.unfold(2, PATCH, PATCH).unfold(3, PATCH, PATCH)  # (B, C, H/P, W/P, P, P)
    patches_4d = grid.permute(0, 2, 3, 1, 4, 5).reshape(B, -1, C, PATCH, PATCH)  # (B, N, C, P, P)
    # BREAKPOINT S02 - Patches
    patches_flat = patches_4d.flatten(2)  # (B, N, C·P·P)
    # BREAKPOINT S03 - Flattened patches
    x_embed = linear(patches_flat, patch_embed)  # (B, N, D)
    # BREAKPOINT S04 - Patch embeddings
    cls_tok = cls_token.expand(B, -1, -1)  # (B, 1, D)
    # BREAKPOINT S05 - Class token BEFORE concatenation
    x_tokens = torch.cat([cls_tok, x_embed], dim=1)  # (B, 1 + N, D)
    # BREAKPOINT S06 - Embeddings AFTER adding the class token
    x_pos = x_tokens + pos_embed
    # BREAKPOINT S07 - Embeddings AFTER adding positional encoding

    x_block1_out = encoder_block(x_pos, blocks[0])
    x_block2_out = encoder_block(x_block1_out, blocks[1])
    # BREAKPOINT S21 - Encoder block 2 output
    x_curr = x_block2_out
    for i in range(2, len(blocks)):
        x_curr = encoder_block(x_curr, blocks[i])
    x_last = x_curr
    # BREAKPOINT S22 - Encoder block N (last) output
    final_seq = layer_norm(x_last, final_norm)
    # BREAKPOINT S23 - Final sequence output (including class token)
    cls_rep = final_seq[:, 0, :]  # (B, D)
    # BREAKPOINT S24 - Class token extracted (final representation)
    logits = linear(cls_rep, head)  # (B, classes)
    # BREAKPOINT S25 - Classification head logits
    probs = logits.softmax(dim=-1)
    # BREAKPOINT S26 - Softmax probabilities
    print("predicted classes:", probs.argmax(-1).tolist())


if __name__ == "__main__":
    main()
