"""Base encoder–decoder (from examples/encoder_decoder_trace.py, shrunk): a post-norm Transformer in plain functions,
batch-first, the paper's interleaved sinusoid positions, an additive −inf causal mask, all 43 snapshots marked. A
batch of two sentence pairs; sizes chosen so that no two named dimensions are equal (B 2, S 7, T 6, C 24, h 3, hs 8,
F 40)."""

import math

import torch

SOURCES = ["the cat sat on the warm mat", "a dog lay by the cold door"]
TARGETS = ["le chat dort sur le tapis", "un chien dort par la porte"]
D_MODEL, N_HEADS, D_FF, N_LAYERS = 24, 3, 40, 2


def build_vocab(sentences):
    return {word: i for i, word in enumerate(sorted({w for s in sentences for w in s.split()}))}


def encode(sentence, vocab):
    return [vocab[word] for word in sentence.split()]


def make_params(shapes):
    params = {}
    for name, shape in shapes.items():
        if name.startswith("ln") and name.endswith("_g"):
            params[name] = 1.0 + 0.1 * torch.randn(shape)
        elif name.startswith("ln") or name.startswith("b"):
            params[name] = 0.1 * torch.randn(shape)
        else:
            params[name] = torch.randn(shape) / math.sqrt(shape[0])
    return params


def attention_params(prefix):
    return {f"{prefix}W_q": (D_MODEL, D_MODEL), f"{prefix}W_k": (D_MODEL, D_MODEL), f"{prefix}W_v": (D_MODEL, D_MODEL),
            f"{prefix}W_o": (D_MODEL, D_MODEL), f"{prefix}b_o": (D_MODEL,)}


def layer_params(decoder):
    shapes = {**attention_params("sa_"), "ln1_g": (D_MODEL,), "ln1_b": (D_MODEL,), "W_1": (D_MODEL, D_FF),
              "b_1": (D_FF,), "W_2": (D_FF, D_MODEL), "b_2": (D_MODEL,), "ln2_g": (D_MODEL,), "ln2_b": (D_MODEL,)}
    if decoder:
        shapes |= {**attention_params("ca_"), "ln3_g": (D_MODEL,), "ln3_b": (D_MODEL,)}
    return make_params(shapes)


def positional_encoding(length, width):
    pos = torch.arange(length, dtype=torch.float32)[:, None]
    i = torch.arange(width)[None, :]
    angle = pos / torch.pow(10000.0, (2 * (i // 2)) / width)
    return torch.where(i % 2 == 0, torch.sin(angle), torch.cos(angle))  # (L, C)


def layer_norm(x, gain, bias, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=False)
    return (x - mean) / torch.sqrt(var + eps) * gain + bias


def split_heads(x, n_heads):
    B, L, C = x.shape
    return x.view(B, L, n_heads, C // n_heads).transpose(1, 2)  # (B, L, C) -> (B, h, L, hs)


def merge_heads(x):
    B, h, L, hs = x.shape
    return x.transpose(1, 2).reshape(B, L, h * hs)  # (B, h, L, hs) -> (B, L, C)


def encoder_layer(x, p):
    enc_in = x  # Snapshot #6
    q = enc_in @ p["sa_W_q"]  # Snapshot #7
    k = enc_in @ p["sa_W_k"]  # Snapshot #8
    v = enc_in @ p["sa_W_v"]  # Snapshot #9
    q_heads = split_heads(q, N_HEADS)  # Snapshot #12
    k_heads = split_heads(k, N_HEADS)  # Snapshot #12
    v_heads = split_heads(v, N_HEADS)  # Snapshot #12
    d_head = q_heads.shape[-1]
    scores_pre_mask = q_heads @ k_heads.transpose(-2, -1) / math.sqrt(d_head)  # Snapshot #10
    attn_weights = torch.softmax(scores_pre_mask, dim=-1)  # Snapshot #11
    attn_concat = merge_heads(attn_weights @ v_heads)  # Snapshot #13
    attn_out = attn_concat @ p["sa_W_o"] + p["sa_b_o"]
    res1_a, res1_b = enc_in, attn_out  # Snapshot #14
    ln1_out = layer_norm(res1_a + res1_b, p["ln1_g"], p["ln1_b"])  # Snapshot #15
    ff_in = ln1_out  # Snapshot #16
    ff1 = ff_in @ p["W_1"] + p["b_1"]  # Snapshot #17
    ff2 = torch.relu(ff1) @ p["W_2"] + p["b_2"]  # Snapshot #18
    enc_out = layer_norm(ff_in + ff2, p["ln2_g"], p["ln2_b"])  # Snapshot #19
    return enc_out


def decoder_layer(x, memory, tgt_mask, p):
    q_m = x @ p["sa_W_q"]  # Snapshot #21
    k_m = x @ p["sa_W_k"]  # Snapshot #22
    v_m = x @ p["sa_W_v"]  # Snapshot #23
    q_heads_m = split_heads(q_m, N_HEADS)  # Snapshot #27
    k_heads_m = split_heads(k_m, N_HEADS)  # Snapshot #27
    v_heads_m = split_heads(v_m, N_HEADS)  # Snapshot #27
    scores_pre_mask_m = q_heads_m @ k_heads_m.transpose(-2, -1) / math.sqrt(q_heads_m.shape[-1])  # Snapshot #24
    attn_weights_m = torch.softmax(scores_pre_mask_m + tgt_mask, dim=-1)  # Snapshot #26
    attn_concat_m = merge_heads(attn_weights_m @ v_heads_m)  # Snapshot #28
    attn_out_m = attn_concat_m @ p["sa_W_o"] + p["sa_b_o"]
    after_msa_norm = layer_norm(x + attn_out_m, p["ln1_g"], p["ln1_b"])  # Snapshot #29

    q_c = after_msa_norm @ p["ca_W_q"]  # Snapshot #30
    k_c = memory @ p["ca_W_k"]  # Snapshot #31
    v_c = memory @ p["ca_W_v"]  # Snapshot #32
    scores_pre_mask_c = split_heads(q_c, N_HEADS) @ split_heads(k_c, N_HEADS).transpose(-2, -1) / math.sqrt(D_MODEL // N_HEADS)  # Snapshot #33
    attn_weights_c = torch.softmax(scores_pre_mask_c, dim=-1)  # Snapshot #34
    attn_concat_c = merge_heads(attn_weights_c @ split_heads(v_c, N_HEADS))  # Snapshot #35
    attn_out_c = attn_concat_c @ p["ca_W_o"] + p["ca_b_o"]
    after_ca_norm = layer_norm(after_msa_norm + attn_out_c, p["ln3_g"], p["ln3_b"])  # Snapshot #36

    ff_in = after_ca_norm  # Snapshot #37
    ff1 = ff_in @ p["W_1"] + p["b_1"]  # Snapshot #38
    ff2 = torch.relu(ff1) @ p["W_2"] + p["b_2"]  # Snapshot #39
    dec_out = layer_norm(ff_in + ff2, p["ln2_g"], p["ln2_b"])  # Snapshot #40
    return dec_out


def main():
    torch.manual_seed(7)
    src_vocab, tgt_vocab = build_vocab(SOURCES), build_vocab(TARGETS)
    src_emb = torch.randn(len(src_vocab), D_MODEL)
    tgt_emb = torch.randn(len(tgt_vocab), D_MODEL)
    encoder = [layer_params(decoder=False) for _ in range(N_LAYERS)]
    decoder = [layer_params(decoder=True) for _ in range(N_LAYERS)]
    out_proj = torch.randn(D_MODEL, len(tgt_vocab)) / math.sqrt(D_MODEL)

    src_ids = [encode(s, src_vocab) for s in SOURCES]  # Snapshot #1
    tgt_ids = [encode(t, tgt_vocab) for t in TARGETS]  # Snapshot #2
    emb_weight_slice = src_emb[:5, :5]  # Snapshot #3
    src_embed = src_emb[torch.tensor(src_ids)]  # Snapshot #4
    S, T = len(src_ids[0]), len(tgt_ids[0])
    src_with_pos = src_embed + positional_encoding(S, D_MODEL)  # Snapshot #5

    x = src_with_pos
    for layer in encoder:
        x = encoder_layer(x, layer)
    memory = x

    tgt_mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)[None, None]  # Snapshot #25
    tgt_with_pos = tgt_emb[torch.tensor(tgt_ids)] + positional_encoding(T, D_MODEL)  # Snapshot #20
    y = tgt_with_pos
    for layer in decoder:
        y = decoder_layer(y, memory, tgt_mask, layer)
    dec_final = y  # Snapshot #41
    logits = dec_final @ out_proj  # Snapshot #42
    logits_slice = logits[0, 0, :10]  # Snapshot #43
    return logits


if __name__ == "__main__":
    print("predicted target IDs:", main().argmax(-1).tolist())
