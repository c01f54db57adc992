"""Weights for the ViT report, as data (the way torchvision's ``Weights`` carry their transforms and meta).

A preset says how to get the weights, how to preprocess an image for them, and what the
classes are called. ``--weights PATH`` loads a torchvision-format state dict from a local file
(for example the one torchvision caches after an online run) after checking its keys and shapes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from transformer_trace.errors import UserError
from transformer_trace.state_dicts import refuse_unusable_values
from transformer_trace.models.vit import ViTConfig, VisionTransformer, from_torchvision

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
# IMAGENET1K_V1's transforms per size preset: the shorter side is resized to this (bilinear), then the centre
# 224×224 is cropped (torchvision's ViT_B_16_Weights / ViT_L_16_Weights .IMAGENET1K_V1.transforms(); tests compare).
IMAGENET_RESIZE = {"b16": 256, "l16": 242}
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


IMAGENET_CLASSES = (
    Path(__file__).resolve().parent / "assets" / "imagenet-classes.txt"
)  # torchvision's meta["categories"]


def class_names(n_classes: int) -> list[str]:
    """ImageNet-1k's names (torchvision's list, copied so that naming classes does not import torchvision),
    CIFAR-10's, or numbers."""
    if n_classes == 1000:
        return IMAGENET_CLASSES.read_text(encoding="utf-8").splitlines()
    if n_classes == 10:
        return list(CIFAR10_CLASSES)
    return [f"class {i}" for i in range(n_classes)]


@dataclass(frozen=True)
class WeightsPreset:
    name: str  # the --weights value
    load: Callable[[str, ViTConfig, int], tuple[VisionTransformer, str]]  # (size, config, seed) -> model, description
    mean: tuple[float, float, float] = IMAGENET_MEAN  # per-channel normalisation the weights expect
    std: tuple[float, float, float] = IMAGENET_STD
    # True: resize the shorter side (IMAGENET_RESIZE) and centre-crop; False: squash to the input size
    crops: bool = False

    def resize(self, size: str) -> int | None:
        """The shorter side the image is resized to before the centre crop, or None for a plain resize to the
        input size."""
        return IMAGENET_RESIZE.get(size) if self.crops else None

    def preprocessing(self, size: str, image_size: int) -> str:
        """How an image is prepared for these weights, in words."""
        resize = self.resize(size)
        if resize is None:
            return f"resized to {image_size}×{image_size} (bilinear; the aspect ratio is not kept)"
        return (f"shorter side resized to {resize} (bilinear, aspect ratio kept), centre {image_size}×{image_size} "
                "cropped, "
                "as torchvision's IMAGENET1K_V1 transforms")

    def categories(self, cfg: ViTConfig) -> list[str]:
        return class_names(cfg.n_classes)


# the last seeded initialisation, for the warm server
_RANDOM_STATE: dict[tuple[ViTConfig, int], dict[str, torch.Tensor]] = {}


def _random(size: str, cfg: ViTConfig, seed: int) -> tuple[VisionTransformer, str]:
    """Seeded random weights; drawing ViT-B/16's 86 M numbers takes seconds, so the last (config, seed) is kept.

    A repeat builds the module on the meta device (no initialisation) and takes the kept tensors, which no run
    changes: the same numbers, bit for bit, as a fresh seeded initialisation (tests/test_vit.py).
    """
    description = f"random (seeded with {seed}; not trained, so the classes are not predictions)"
    torch.manual_seed(seed)
    state = _RANDOM_STATE.get((cfg, seed))
    if state is None:
        model = VisionTransformer(cfg)
        _RANDOM_STATE.clear()  # one model's worth of memory at most
        _RANDOM_STATE[(cfg, seed)] = {name: tensor.detach() for name, tensor in model.state_dict().items()}
        return model, description
    with torch.device("meta"):
        model = VisionTransformer(cfg)
    model.load_state_dict(state, assign=True)
    return model, description


_TORCHVISION_BUILDERS = {"b16": ("vit_b_16", "ViT_B_16_Weights"), "l16": ("vit_l_16", "ViT_L_16_Weights")}


def _imagenet(size: str, cfg: ViTConfig, seed: int) -> tuple[VisionTransformer, str]:
    """torchvision's pretrained model through its weights API (downloads once, then cached)."""
    import torchvision.models as tvm

    if size not in _TORCHVISION_BUILDERS:
        raise UserError(f"--weights imagenet exists for the {' and '.join(_TORCHVISION_BUILDERS)} presets, not "
                        f"{size!r}")
    builder, weights_enum = (getattr(tvm, name) for name in _TORCHVISION_BUILDERS[size])
    weights = weights_enum.IMAGENET1K_V1
    try:
        tv_model = builder(weights=weights)
    except (OSError, RuntimeError) as exc:  # URLError is an OSError
        raise UserError(
            f"could not download torchvision's {weights} weights ({type(exc).__name__}: {exc}); connect to the "
            "internet "
            "once (they are cached in ~/.cache/torch), pass that cached file with --weights PATH, or use --weights "
            "random"
        ) from None
    return from_torchvision(tv_model.eval()), f"torchvision {weights} (pretrained on ImageNet-1k)"


PRESETS: dict[str, WeightsPreset] = {
    "random": WeightsPreset("random", _random),
    "imagenet": WeightsPreset("imagenet", _imagenet, crops=True),
}


def resolve(weights: str) -> WeightsPreset:
    """The preset named ``weights``, or one that loads the state dict at path ``weights``."""
    if weights in PRESETS:
        return PRESETS[weights]
    path = Path(weights)
    if not path.is_file():
        raise UserError(f"--weights {weights!r} is neither a preset ({', '.join(PRESETS)}) nor a file; "
                        "give a torchvision ViT state dict (.pth) or one of the presets")
    # A torchvision-layout file is prepared like torchvision's ImageNet weights, the usual source of such a file.
    return WeightsPreset(str(path), lambda size, cfg, seed: _from_file(path, size, cfg), crops=True)


def _torchvision_model(size: str) -> nn.Module:
    import torchvision.models as tvm

    if size not in _TORCHVISION_BUILDERS:
        raise UserError(f"--weights PATH loads torchvision's {' or '.join(_TORCHVISION_BUILDERS)} layout, not the "
                        f"{size!r} preset")
    return getattr(tvm, _TORCHVISION_BUILDERS[size][0])(weights=None)


def _from_file(path: Path, size: str, cfg: ViTConfig) -> tuple[VisionTransformer, str]:
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the user's to fix, in one line
        raise UserError(f"{path} is not a PyTorch state dict torch.load can read ({type(exc).__name__}); "
                        "save one with torch.save(model.state_dict(), path)") from None
    if isinstance(state, dict) and "model" in state and isinstance(state["model"], dict):
        state = state["model"]  # training checkpoints often wrap the state dict
    if not isinstance(state, dict):
        raise UserError(f"{path} holds a {type(state).__name__}, not a state dict (a mapping of parameter names to "
                        "tensors)")
    if not all(isinstance(key, str) for key in state):
        odd = next(key for key in state if not isinstance(key, str))
        raise UserError(f"{path} is not a state dict: its keys must be parameter names (text), and {odd!r:.40} is of "
                        f"type {type(odd).__name__}")
    tv_model = _torchvision_model(size)
    expected = tv_model.state_dict()
    for key, tensor in expected.items():
        if key not in state:
            raise UserError(f"{path} does not fit torchvision's ViT {size}: key {key!r} is missing")
        if not isinstance(state[key], torch.Tensor) or tuple(state[key].shape) != tuple(tensor.shape):
            got = tuple(state[key].shape) if isinstance(state[key], torch.Tensor) else type(state[key]).__name__
            raise UserError(f"{path} does not fit torchvision's ViT {size}: key {key!r} has shape {got}, expected "
                            f"{tuple(tensor.shape)}")
    extra = sorted(set(state) - set(expected))
    if extra:
        raise UserError(f"{path} does not fit torchvision's ViT {size}: unexpected key {extra[0]!r}"
                        + (f" and {len(extra) - 1} more" if len(extra) > 1 else ""))
    refuse_unusable_values(path, state, expected, "ViT")
    tv_model.load_state_dict(state)
    return from_torchvision(tv_model.eval()), f"loaded from {path.name} (torchvision ViT {size} state dict)"
