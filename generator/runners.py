"""Build each model, feed it the report's inputs, and record one forward pass."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from generator.catalogue import Report
from generator.errors import UserError
from generator.run import ModelRun, resolve_device
from models.encoder_decoder import EncoderDecoderConfig, EncoderDecoderTransformer, build_vocab, encode
from models.recording import recording

DEFAULT_SRC = "hello from cairo egypt team project"
DEFAULT_TGT = "we are debugging transformer today"


@dataclass(frozen=True)
class EncoderDecoderInputs:
    src: str = DEFAULT_SRC
    tgt: str = DEFAULT_TGT
    seed: int = 7
    device: str = "auto"
    layer: int = 1  # 1-based: which encoder and decoder layer the pages trace
    n_layers: int = 2
    d_model: int = 128
    n_heads: int = 4
    d_ff: int = 256


def _check_sentence(text: str, which: str, limit: int) -> str:
    if not text.strip():
        raise UserError(f"the {which} sentence is empty; give at least one word, e.g. --{which} \"hello world\"")
    n = len(text.split())
    if n > limit:
        raise UserError(f"the {which} sentence has {n} words, more than the {limit} this model supports; shorten it")
    return " ".join(text.split())


def run_encoder_decoder(report: Report, opts: EncoderDecoderInputs) -> ModelRun:
    max_len = 512
    src = _check_sentence(opts.src, "src", max_len)
    tgt = _check_sentence(opts.tgt, "tgt", max_len)
    if not 1 <= opts.layer <= opts.n_layers:
        raise UserError(f"--layer {opts.layer} is out of range; this model has layers 1 to {opts.n_layers}")
    device = resolve_device(opts.device)
    src_vocab, tgt_vocab = build_vocab(src), build_vocab(tgt)
    cfg = EncoderDecoderConfig(
        src_vocab_size=len(src_vocab), tgt_vocab_size=len(tgt_vocab), d_model=opts.d_model, n_heads=opts.n_heads,
        d_ff=opts.d_ff, n_encoder_layers=opts.n_layers, n_decoder_layers=opts.n_layers, max_len=max_len,
    )
    # Weights are drawn on the CPU so a seed gives the same model on every device.
    torch.manual_seed(opts.seed)
    model = EncoderDecoderTransformer(cfg).eval()
    model.to(device)
    src_ids = torch.tensor([encode(src, src_vocab)], device=device)  # (1, S)
    tgt_ids = torch.tensor([encode(tgt, tgt_vocab)], device=device)  # (1, T)
    layer = opts.layer - 1
    places = {
        "enc": f"encoder.layers.{layer}",
        "dec": f"decoder.layers.{layer}",
        "enc_prev": "src_with_pos" if layer == 0 else f"encoder.layers.{layer - 1}.output",
        "dec_prev": "tgt_with_pos" if layer == 0 else f"decoder.layers.{layer - 1}.output",
        "dec_last": f"decoder.layers.{opts.n_layers - 1}.output",
    }
    keep = {name.format(**places) for name in report.record_names()}
    with torch.no_grad(), recording(keep=keep) as rec:
        model(src_ids, tgt_ids)
    model.cpu()
    words = lambda vocab: [w for w, _ in sorted(vocab.items(), key=lambda kv: kv[1])]  # noqa: E731
    return ModelRun(
        report=report.key,
        model=model,
        recording=rec,
        inputs={
            "src": src, "tgt": tgt,
            "src_vocab": src_vocab, "tgt_vocab": tgt_vocab,
            "src_words": words(src_vocab), "tgt_words": words(tgt_vocab),
            "src_tokens": src.split(), "tgt_tokens": tgt.split(),
            "layer": opts.layer, "config": cfg,
            "summary": f"{cfg.n_encoder_layers} encoder + {cfg.n_decoder_layers} decoder layers, {cfg.n_heads} heads, "
                       f"d_model {cfg.d_model}, d_ff {cfg.d_ff}, post-norm, sinusoidal positions.",
            "facts": [["source", src], ["target", tgt], ["seed", str(opts.seed)], ["device", device.type], ["weights", "random (seeded)"]],
        },
        dims={
            "B": 1, "S": len(src.split()), "T": len(tgt.split()), "C": cfg.d_model, "h": cfg.n_heads,
            "hs": cfg.head_size, "F": cfg.d_ff, "V": len(tgt_vocab), "V_src": len(src_vocab),
        },
        places=places,
        seed=opts.seed,
        device=device.type,
    )
