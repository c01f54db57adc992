"""The encoder–decoder's forward pass against torch.nn's Transformer layers (benchmarks/run.py runs every report's
benchmark.py; see generator/reports/vit/benchmark.py for the functions it calls)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from transformer_trace.models.encoder_decoder import EncoderDecoderConfig, EncoderDecoderTransformer, causal_mask
from transformer_trace.models.recording import recording

if TYPE_CHECKING:  # pragma: no cover
    from transformer_trace.catalogue import Report


def model_tables(report: Report, device: torch.device, repeats: int,
                 interleaved) -> list[tuple[str, list[tuple[str, float]], float]]:
    if device.type != "cpu":  # seed-sized: a GPU would time its launch overhead
        return []
    torch.manual_seed(7)
    model = EncoderDecoderTransformer(EncoderDecoderConfig(src_vocab_size=6, tgt_vocab_size=5)).eval()
    src, tgt = torch.tensor([[3, 2, 0, 1, 5, 4]]), torch.tensor([[4, 0, 1, 3, 2]])
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(128, 4, dim_feedforward=256, dropout=0.0, batch_first=True),
                                2, enable_nested_tensor=False).eval()
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(128, 4, dim_feedforward=256, dropout=0.0, batch_first=True),
                                2).eval()
    mask = causal_mask(5)[0, 0]

    def reference():
        x = model.pos(model.src_emb(src))
        y = model.pos(model.tgt_emb(tgt))
        return model.out_proj(dec(y, enc(x), tgt_mask=mask))

    def recorded():
        with recording():
            model(src, tgt)

    with torch.no_grad():
        t = interleaved({"torch": reference, "off": lambda: model(src, tgt), "on": recorded}, repeats * 5)
    rows = [("torch.nn Transformer layers", t["torch"]), ("ours, recording off", t["off"]), ("ours, recording on (all "
                                                                                             "tensors)", t["on"])]
    return [("Encoder–decoder forward (seed sentences), CPU", rows, rows[0][1])]


def targets(tables: list[tuple[str, list[tuple[str, float]], float]]) -> list[tuple[str, str, bool]]:
    return []
