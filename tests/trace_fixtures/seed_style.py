"""Seed-style encoder–decoder: nn.Module classes, one attention module for all three uses, the seed's marker comments."""
import math

import torch
import torch.nn.functional as F
from torch import nn

SRC_SENTENCE = "hello from cairo egypt team project"
TGT_SENTENCE = "we are debugging transformer today"


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d_model, d_model) for _ in range(4))

    def _split_heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.n_heads, self.d_head).transpose(1, 2)

    def forward(self, q_in, k_in, v_in, mask=None):
        q = self.W_q(q_in)  # SNAPSHOT #7 or #21 or #30 - Q (depending on caller)
        k = self.W_k(k_in)  # SNAPSHOT #8 or #22 or #31 - K
        v = self.W_v(v_in)  # SNAPSHOT #9 or #23 or #32 - V
        q_heads = self._split_heads(q)  # SNAPSHOT #12 or #27 - Q multi-head split (shape: b,h,seq,d_head)
        k_heads = self._split_heads(k)  # SNAPSHOT #12 or #27
        v_heads = self._split_heads(v)  # SNAPSHOT #12 or #27

        # SNAPSHOT #10 or #24 or #33 - Attention score matrix before softmax (pre-mask)
        scores = (q_heads @ k_heads.transpose(-2, -1)) / math.sqrt(self.d_head)
        if mask is not None:
            scores = scores + mask
        attn_weights = F.softmax(scores, dim=-1)  # SNAPSHOT #11 or #26 or #34 - After softmax
        b, h, s, d = attn_weights.shape[0], self.n_heads, q.shape[1], self.d_head
        attn_concat = (attn_weights @ v_heads).transpose(1, 2).reshape(b, s, h * d)  # SNAPSHOT #13 or #28 or #35 - concat
        return self.W_o(attn_concat)


class EncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads)
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.fc1, self.fc2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def forward(self, x):
        enc_in = x  # SNAPSHOT #6 - Encoder block input tensor
        attn_out = self.self_attn(x, x, x)
        res1_a, res1_b = x, attn_out
        x = self.ln1(res1_a + res1_b)  # SNAPSHOT #14 - Residual connection tensors; SNAPSHOT #15 - Layer norm output
        ff_in = x  # SNAPSHOT #16 - Feed-forward input
        ff1 = self.fc1(ff_in)  # SNAPSHOT #17
        ff2 = self.fc2(F.relu(ff1))  # SNAPSHOT #18
        enc_out = self.ln2(ff_in + ff2)  # SNAPSHOT #19 - Encoder block final output tensor
        return enc_out


class DecoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff):
        super().__init__()
        self.self_attn, self.cross_attn = MultiHeadAttention(d_model, n_heads), MultiHeadAttention(d_model, n_heads)
        self.ln1, self.ln2, self.ln3 = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.fc1, self.fc2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def forward(self, y, memory, mask):
        after_msa_norm = self.ln1(y + self.self_attn(y, y, y, mask))  # SNAPSHOT #29
        after_ca_norm = self.ln2(after_msa_norm + self.cross_attn(after_msa_norm, memory, memory))  # SNAPSHOT #36
        ff_in = after_ca_norm  # SNAPSHOT #37
        dec_out = self.ln3(ff_in + self.fc2(F.relu(self.fc1(ff_in))))  # SNAPSHOT #40
        return dec_out


def main():
    torch.manual_seed(7)
    src_vocab = {w: i for i, w in enumerate(sorted(set(SRC_SENTENCE.split())))}
    tgt_vocab = {w: i for i, w in enumerate(sorted(set(TGT_SENTENCE.split())))}
    src_ids = [src_vocab[w] for w in SRC_SENTENCE.split()]  # SNAPSHOT #1 - Raw input tokens (IDs)
    tgt_ids = [tgt_vocab[w] for w in TGT_SENTENCE.split()]  # SNAPSHOT #2 - Target tokens (IDs)
    d_model = 128
    src_emb, tgt_emb = nn.Embedding(len(src_vocab), d_model), nn.Embedding(len(tgt_vocab), d_model)
    enc, dec = EncoderLayer(d_model, 4, 256), DecoderLayer(d_model, 4, 256)
    with torch.no_grad():
        src_embed = src_emb(torch.tensor([src_ids]))  # SNAPSHOT #4
        memory = enc(src_embed)
        T = len(tgt_ids)
        tgt_mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)[None, None]  # SNAPSHOT #25 - Mask tensor
        tgt_with_pos = tgt_emb(torch.tensor([tgt_ids]))  # SNAPSHOT #20
        dec(tgt_with_pos, memory, tgt_mask)


if __name__ == "__main__":
    main()
