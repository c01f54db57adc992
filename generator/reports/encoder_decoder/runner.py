"""Run the encoder–decoder on a source and a target sentence with recording on."""

from __future__ import annotations

import torch

from transformer_trace.catalogue import Report
from transformer_trace.reports.encoder_decoder.options import EncoderDecoderOptions
from transformer_trace.run import ModelRun, resolve_device
from transformer_trace.models.encoder_decoder import LEGEND, EncoderDecoderTransformer, build_vocab, encode
from transformer_trace.models.recording import recording


def _words(vocab: dict[str, int]) -> list[str]:
    return [word for word, _ in sorted(vocab.items(), key=lambda item: item[1])]


def run(report: Report, opts: EncoderDecoderOptions) -> ModelRun:
    device = resolve_device(opts.device)
    src, tgt = opts.src, opts.tgt
    src_vocab, tgt_vocab = build_vocab(src), build_vocab(tgt)
    cfg = opts.config()
    # Weights are drawn on the CPU so a seed gives the same model on every device.
    torch.manual_seed(opts.seed)
    model = EncoderDecoderTransformer(cfg).eval()
    model.to(device)
    src_ids = torch.tensor([encode(src, src_vocab)], device=device)  # (1, S)
    tgt_ids = torch.tensor([encode(tgt, tgt_vocab)], device=device)  # (1, T)
    places = opts.places()
    keep = report.names_to_record(opts)
    with torch.no_grad(), recording(keep=keep) as rec:
        model(src_ids, tgt_ids)
    model.cpu()
    return ModelRun(
        report=report,
        model=model,
        recording=rec,
        inputs={
            "src": src, "tgt": tgt,
            "src_vocab": src_vocab, "tgt_vocab": tgt_vocab,
            "src_words": _words(src_vocab), "tgt_words": _words(tgt_vocab),
            "src_tokens": src.split(), "tgt_tokens": tgt.split(),
            "layer": opts.layer, "config": cfg,
            "removed_characters": list(opts.removed),
            "summary": f"{cfg.n_encoder_layers} encoder + {cfg.n_decoder_layers} decoder layers, {cfg.n_heads} heads, "
                       f"d_model {cfg.d_model}, d_ff {cfg.d_ff}, post-norm, sinusoidal positions.",
            "facts": [["source", src], ["target", tgt], ["seed", str(opts.seed)], ["device", device.type],
                      ["weights", "random (seeded)"]],
        },
        dims=LEGEND.sizes(B=1, S=len(src.split()), T=len(tgt.split()), C=cfg.d_model, h=cfg.n_heads, F=cfg.d_ff,
                          V=len(tgt_vocab), V_src=len(src_vocab)),
        places=places,
        seed=opts.seed,
        device=device.type,
    )
