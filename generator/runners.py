"""Build each model, feed it the report's inputs, and record one forward pass."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from generator.catalogue import Report
from generator.errors import UserError
from generator.run import ModelRun, resolve_device
from generator.tensor_data import exploration_names  # explorer: every layer's attention and output
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
    if min(opts.n_layers, opts.d_model, opts.n_heads, opts.d_ff) < 1 or opts.d_model % opts.n_heads:
        raise UserError(f"--d-model {opts.d_model} must be a positive multiple of --heads {opts.n_heads} (and sizes positive)")
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
    keep |= set(exploration_names(report.key, cfg))  # explorer: every layer's attention and output
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


# ----------------------------------------------------------------------------- ViT

WEIGHTS = ("random", "imagenet")


@dataclass(frozen=True)
class VitInputs:
    image: Path | None = None  # None: the bundled image
    weights: str = "random"
    seed: int = 7
    device: str = "auto"
    layer: int = 1  # 1-based block traced by S08-S20
    size: str = "b16"


def _imagenet_vit(size: str):
    """torchvision's pretrained model through its weights API (downloads once, then cached)."""
    import torchvision.models as tvm

    builders = {"b16": (tvm.vit_b_16, tvm.ViT_B_16_Weights.IMAGENET1K_V1), "l16": (tvm.vit_l_16, tvm.ViT_L_16_Weights.IMAGENET1K_V1)}
    if size not in builders:
        raise UserError(f"--weights imagenet exists for the b16 and l16 presets, not {size!r}")
    build, weights = builders[size]
    try:
        return build(weights=weights).eval(), weights
    except (OSError, RuntimeError) as exc:  # URLError is an OSError
        raise UserError(
            f"could not download torchvision's {weights} weights ({type(exc).__name__}: {exc}); "
            "connect to the internet once (they are cached in ~/.cache/torch), or use --weights random"
        ) from None


def class_names(n_classes: int) -> list[str]:
    if n_classes == 1000:
        from torchvision.models import ViT_B_16_Weights

        return list(ViT_B_16_Weights.IMAGENET1K_V1.meta["categories"])  # shipped with torchvision, no download
    if n_classes == 10:
        return ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]  # CIFAR-10
    return [f"class {i}" for i in range(n_classes)]


def run_vit(report: Report, opts: VitInputs) -> ModelRun:
    from generator.images import DEFAULT_IMAGE, load_rgb, preprocess
    from models.vit import PRESETS, VisionTransformer, from_torchvision

    if opts.size not in PRESETS:
        raise UserError(f"unknown ViT size {opts.size!r}; choose one of {', '.join(PRESETS)}")
    if opts.weights not in WEIGHTS:
        raise UserError(f"unknown weights {opts.weights!r}; choose random or imagenet")
    cfg = PRESETS[opts.size]
    if not 1 <= opts.layer <= cfg.n_layers:
        raise UserError(f"--layer {opts.layer} is out of range; this ViT has blocks 1 to {cfg.n_layers}")
    device = resolve_device(opts.device)
    path = opts.image or DEFAULT_IMAGE
    original, mode = load_rgb(Path(path))
    image = preprocess(original, cfg.image_size)  # (1, 3, H, W)

    if opts.weights == "imagenet":
        tv_model, weights = _imagenet_vit(opts.size)
        model = from_torchvision(tv_model)
        weights_text = f"torchvision {weights} (pretrained on ImageNet-1k)"
    else:
        torch.manual_seed(opts.seed)
        model = VisionTransformer(cfg)
        weights_text = f"random (seeded with {opts.seed}; not trained, so the classes are not predictions)"
    model = model.eval().to(device)
    block = opts.layer - 1
    places = {
        "block": f"blocks.{block}",
        "block_prev": "tokens_pos" if block == 0 else f"blocks.{block - 1}.output",
        "block2": f"blocks.{min(1, cfg.n_layers - 1)}",
        "block_last": f"blocks.{cfg.n_layers - 1}",
    }
    keep = {name.format(**places) for name in report.record_names()}
    keep |= set(exploration_names(report.key, cfg))  # explorer: every block's attention and output
    with torch.no_grad(), recording(keep=keep) as rec:
        model(image.to(device))
    model.cpu()
    shown_name = "the bundled image (Grace Hopper, U.S. Navy photo, public domain)" if opts.image is None else Path(path).name
    n_params = sum(p.numel() for p in model.parameters())
    return ModelRun(
        report=report.key,
        model=model,
        recording=rec,
        inputs={
            "image_name": shown_name,
            "image_mode": mode,
            "original_size": f"{original.width}×{original.height}",
            "original_image": original,
            "class_names": class_names(cfg.n_classes),
            "preset": opts.size,
            "layer": opts.layer,
            "config": cfg,
            "summary": f"ViT preset {opts.size}: {cfg.image_size}×{cfg.image_size} input, {cfg.patch_size}×{cfg.patch_size} patches, "
                       f"{cfg.d_model} dims, {cfg.n_heads} heads, {cfg.n_layers} blocks, {cfg.n_classes} classes ({n_params / 1e6:.1f} M parameters).",
            "facts": [["image", shown_name], ["weights", weights_text], ["seed", str(opts.seed)], ["device", device.type]],
        },
        dims={
            "B": 1, "Ch": 3, "H": cfg.image_size, "W": cfg.image_size, "P": cfg.patch_size, "N": cfg.n_patches,
            "N1": cfg.n_patches + 1, "C": cfg.d_model, "h": cfg.n_heads, "hs": cfg.head_size, "M": cfg.mlp_dim, "K": cfg.n_classes,
        },
        places=places,
        seed=opts.seed,
        device=device.type,
        weights=weights_text,
    )
