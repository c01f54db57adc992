"""Driver (ours, not upstream): majumderb/rezero's `RZTXEncoderLayer` and `RZTXDecoderLayer` (`rztx.py`, the official
code of "ReZero is All You Need", drop-in layers for PyTorch's `nn.Transformer`), an encoder–decoder **without any
LayerNorm**: every sublayer's output is **multiplied by one learned scalar per layer (`resweight`)** before it is added
to the stream, `x + α·F(x)`; the three attentions are **`nn.MultiheadAttention`** on **sequence-first tensors
(S, B, C)**, the feed-forward a ReLU MLP written on one line.

Upstream ships only the layers: the embeddings (one per language), a sinusoidal position table added to them, the
layer loops (`nn.TransformerEncoder`/`Decoder` of current PyTorch pass the layers an `is_causal` argument these
layers do not take), the causal mask (`nn.Transformer.generate_square_subsequent_mask`, 0 / −inf) and the output
Linear are ours, here. ReZero initialises every α to 0 (each layer the identity at the start of training); the driver
draws them from U(0.3, 0.9), as a trained model's would be, so that each sublayer reaches the stream.

Tiny sizes (width 32, 4 heads of 8, feed-forward 64, 2 encoder and 2 decoder layers, 40 source and 40 target
tokens), seed 0, eval mode, one forward pass without gradients on two source sentences of 7 tokens and two target
prefixes of 6.
Trace: python -m transformer_trace trace driver.py"""
import math

import torch
import torch.nn as nn

from rztx import RZTXDecoderLayer, RZTXEncoderLayer

D_MODEL, N_HEADS, D_FF, LAYERS, V_SRC, V_TGT = 32, 4, 64, 2, 40, 40


def positional_encoding(length, width):
    """The sinusoidal table of "Attention Is All You Need", (length, width)."""
    position = torch.arange(length, dtype=torch.float32)[:, None]
    frequency = torch.exp(torch.arange(0, width, 2, dtype=torch.float32) * (-math.log(10000.0) / width))
    table = torch.zeros(length, width)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)
    return table


torch.manual_seed(0)
src_embedding = nn.Embedding(V_SRC, D_MODEL)
tgt_embedding = nn.Embedding(V_TGT, D_MODEL)
encoder = nn.ModuleList([RZTXEncoderLayer(D_MODEL, N_HEADS, dim_feedforward=D_FF) for _ in range(LAYERS)])
decoder = nn.ModuleList([RZTXDecoderLayer(D_MODEL, N_HEADS, dim_feedforward=D_FF) for _ in range(LAYERS)])
generator = nn.Linear(D_MODEL, V_TGT)
with torch.no_grad():
    for layer in [*encoder, *decoder]:
        layer.resweight.uniform_(0.3, 0.9)
for module in (src_embedding, tgt_embedding, encoder, decoder, generator):
    module.eval()

src_ids = torch.randint(1, V_SRC, (2, 7))  # Snapshot #1
tgt_ids = torch.randint(1, V_TGT, (2, 6))  # Snapshot #2
with torch.no_grad():
    emb_weight_slice = src_embedding.weight[:5, :5]  # Snapshot #3
    src_embed = src_embedding(src_ids)  # Snapshot #4
    src_with_pos = src_embed + positional_encoding(src_ids.shape[1], D_MODEL)  # Snapshot #5
    memory = src_with_pos.transpose(0, 1)  # (S, B, C): nn.MultiheadAttention's default layout
    for layer in encoder:
        memory = layer(memory)
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt_ids.shape[1])  # Snapshot #25
    y = (tgt_embedding(tgt_ids) + positional_encoding(tgt_ids.shape[1], D_MODEL)).transpose(0, 1)
    for layer in decoder:
        y = layer(y, memory, tgt_mask=tgt_mask)
    dec_final = y  # Snapshot #41
    logits = generator(dec_final)  # Snapshot #42
    logits_slice = logits[0, 0, :10]  # Snapshot #43
print("logits", tuple(logits.shape), "next tokens", logits[-1].argmax(-1).tolist(),
      "sum |logits|", round(float(logits.abs().sum()), 4))
