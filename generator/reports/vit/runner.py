"""Run the ViT on one image with recording on."""

from __future__ import annotations

from pathlib import Path

import torch

from transformer_trace.catalogue import Report
from transformer_trace.reports.vit.images import DEFAULT_IMAGE, crop_box, load_rgb, preprocess
from transformer_trace.reports.vit.options import VitOptions
from transformer_trace.reports.vit.rollout import attention_rollout
from transformer_trace.reports.vit.weights import resolve
from transformer_trace.places import Place
from transformer_trace.run import ModelRun, resolve_device
from transformer_trace.text import clean_text
from transformer_trace.models.recording import recording
from transformer_trace.models.vit import LEGEND, SelfAttention

EVERY_BLOCK = Place("blocks.{i}.attn", SelfAttention)  # {i}: each block in turn
BUNDLED_IMAGE_NAME = "the bundled image (Grace Hopper, U.S. Navy photo, public domain)"


def run(report: Report, opts: VitOptions) -> ModelRun:
    cfg = opts.config()
    device = resolve_device(opts.device)
    preset = resolve(opts.weights)
    path = opts.image or DEFAULT_IMAGE
    original, mode = load_rgb(Path(path))
    resize = preset.resize(opts.size)  # None: squash to the input size; else shorter side, then centre crop
    image = preprocess(original, cfg.image_size, preset.mean, preset.std, resize)  # (1, 3, H, W)
    model, weights_text = preset.load(opts.size, cfg, opts.seed)
    model = model.eval().to(device)
    places = opts.places()
    every_block = [EVERY_BLOCK.PROBS.name({"i": str(i)}) for i in range(cfg.n_layers)]  # the rollout reads them all
    keep = report.names_to_record(opts) | set(every_block)
    with torch.no_grad(), recording(keep=keep) as rec:
        model(image.to(device))
    model.cpu()
    rollout = attention_rollout([rec.tensor(name).float().cpu() for name in every_block])  # (B, N1, N1)
    # a file name is user text too
    shown_name = BUNDLED_IMAGE_NAME if opts.image is None else clean_text(Path(path).name)
    n_params = sum(p.numel() for p in model.parameters())
    return ModelRun(
        report=report,
        model=model,
        recording=rec,
        inputs={
            "image_name": shown_name,
            "image_mode": mode,
            "original_size": f"{original.width}×{original.height}",
            "original_image": original,
            "mean": preset.mean,
            "resize": resize,
            "crop_box": list(crop_box(original.width, original.height, resize, cfg.image_size)) if resize else None,
            "preprocessing": preset.preprocessing(opts.size, cfg.image_size),
            "std": preset.std,
            "class_names": preset.categories(cfg),
            "preset": opts.size,
            "rollout": rollout,
            "layer": opts.layer,
            "config": cfg,
            "summary": f"ViT preset {opts.size}: {cfg.image_size}×{cfg.image_size} input, "
                       f"{cfg.patch_size}×{cfg.patch_size} patches, "
                       f"{cfg.d_model} dims, {cfg.n_heads} heads, {cfg.n_layers} blocks, {cfg.n_classes} classes "
                       f"({n_params / 1e6:.1f} M parameters).",
            "facts": [["image", shown_name], ["weights", weights_text], ["seed", str(opts.seed)],
                      ["device", device.type]],
        },
        dims=LEGEND.sizes(B=1, Ch=3, H=cfg.image_size, W=cfg.image_size, P=cfg.patch_size, N=cfg.n_patches,
                          C=cfg.d_model, h=cfg.n_heads, M=cfg.mlp_dim, K=cfg.n_classes),
        places=places,
        seed=opts.seed,
        device=device.type,
        weights=weights_text,
    )
