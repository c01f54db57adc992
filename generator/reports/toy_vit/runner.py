"""Run the toy ViT on the 6×6 image with recording on, and set every number the seed printed beside the run's."""

from __future__ import annotations

import torch

from transformer_trace.catalogue import Report
from transformer_trace.reports.toy_vit import seed
from transformer_trace.reports.toy_vit.options import ToyVitOptions
from transformer_trace.run import ModelRun, resolve_device
from transformer_trace.models.recording import recording
from transformer_trace.models.toy_vit import LEGEND, ToyVisionTransformer


def _weights(opts: ToyVitOptions) -> tuple[ToyVisionTransformer, str]:
    cfg = opts.config()
    torch.manual_seed(opts.seed)
    model = ToyVisionTransformer(cfg)
    if opts.weights == "random":
        for parameter in model.parameters():  # PyTorch's own initialisation leaves [CLS] and positions at zero
            torch.nn.init.normal_(parameter, std=0.5)
        return model, f"random (torch.manual_seed({opts.seed}), every weight normal with std 0.5)"
    model.load_state_dict(seed.state_dict(cfg))
    return model, "seed 004's E, [CLS], positions, W₁, b₁, W₂, b₂, W_cls, b_cls; identity Q/K/V/O and LayerNorm"


def _pages(report: Report, comparison: dict[str, seed.Comparison]) -> dict[str, dict[str, str]]:
    """Seed entry -> the label and path (within the report) of the snapshot page that shows it, for the overview's
    links."""
    from transformer_trace.pages import page_path

    by_tensor = {snap.main.template: snap for snap in report.snapshots}
    return {entry: {"label": report.label(by_tensor[c.step.page].number), "path": page_path(by_tensor[c.step.page])}
            for entry, c in comparison.items()}


def run(report: Report, opts: ToyVitOptions) -> ModelRun:
    cfg = opts.config()
    device = resolve_device(opts.device)
    rows = opts.image_rows()
    image = seed.image() if rows is None else torch.tensor(rows).view(1, 1, 6, 6)  # (6, 6) -> (B, Ch, H, W)
    model, weights_text = _weights(opts)
    model = model.eval().to(device)
    with torch.no_grad(), recording(keep=report.names_to_record(opts)) as rec:
        model(image.to(device))
    model.cpu()
    pixels = image[0, 0].tolist()
    image_text = "the seed's 6×6 image" if rows is None else "a 6×6 image given with --pixels"
    n_params = sum(p.numel() for p in model.parameters())
    result = ModelRun(
        report=report,
        model=model,
        recording=rec,
        inputs={
            "pixels": pixels,
            "pixels_text": opts.pixels,
            "image_name": image_text,
            "seed_image": rows is None,
            "seed_weights": opts.weights == "seed",
            "class_names": list(seed.CLASSES),
            "tokens": list(seed.TOKENS),
            "patches": list(seed.PATCHES),
            "query": seed.QUERY,
            "config": cfg,
            "summary": f"Seed 004's toy ViT: a {cfg.image_size}×{cfg.image_size} grayscale image, "
                       f"{cfg.patch_size}×{cfg.patch_size} patches "
                       f"(A–I), width {cfg.d_model}, {cfg.n_layers} post-norm encoder layer with {cfg.n_heads} head, "
                       f"MLP width {cfg.mlp_dim}, "
                       f"{cfg.n_classes} classes ({n_params} parameters).",
            "facts": [["image", image_text], ["weights", weights_text], ["seed", str(opts.seed)],
                      ["device", device.type]],
        },
        dims=LEGEND.sizes(B=1, Ch=cfg.in_channels, H=cfg.image_size, W=cfg.image_size, P=cfg.patch_size,
                          N=cfg.n_patches, C=cfg.d_model, h=cfg.n_heads, M=cfg.mlp_dim, K=cfg.n_classes),
        places=opts.places(),
        seed=opts.seed,
        device=device.type,
        weights=weights_text,
    )
    comparison = seed.compare(result)  # every printed result beside this run's value
    result.inputs |= {"seed_comparison": comparison, "seed_given": seed.given(result),
                      "seed_table": seed.table(comparison), "seed_pages": _pages(report, comparison),
                      "seed_inputs": {entry: [{"item": p.item, "line": p.line,
                                               "text": list(p.text)} for p in seed.printed()[entry]]
                                      for entry in seed.INPUTS}}
    return result
