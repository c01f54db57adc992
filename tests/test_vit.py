"""The ViT: equal to torchvision's vit_b_16 with the same weights, loads any common image, fails offline cleanly."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image

from generator.catalogue import VIT
from generator.errors import UserError
from generator.images import DEFAULT_IMAGE, load_rgb, preprocess
from generator.runners import VitInputs, _imagenet_vit, run_vit
from models.recording import recording
from models.vit import PRESETS, VisionTransformer, from_torchvision


@pytest.fixture(scope="module")
def torchvision_vit() -> torch.nn.Module:
    """vit_b_16 with locally made weights: random init, then every tensor nudged (its head and [CLS] start at zero)."""
    torch.manual_seed(0)
    model = torchvision.models.vit_b_16().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.02)
    return model


def test_from_torchvision_gives_the_same_logits_on_random_inputs(torchvision_vit, tmp_path):
    # Round-trip through a saved state dict, as a downloaded checkpoint would arrive.
    torch.save(torchvision_vit.state_dict(), tmp_path / "vit_b_16.pth")
    reloaded = torchvision.models.vit_b_16()
    reloaded.load_state_dict(torch.load(tmp_path / "vit_b_16.pth"))
    ours = from_torchvision(reloaded.eval()).eval()
    images = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        diff = (ours(images) - torchvision_vit(images)).abs().max()
    assert diff <= 1e-4


def test_recording_captures_every_snapshot_tensor_with_the_seed_shapes(torchvision_vit):
    ours = from_torchvision(torchvision_vit).eval()
    with torch.no_grad(), recording() as rec:
        ours(torch.randn(1, 3, 224, 224))
    assert rec.tensor("patch_embed.patches").shape == (1, 196, 3, 16, 16)
    assert rec.tensor("blocks.0.attn.q").shape == (1, 12, 197, 64)
    assert rec.tensor("blocks.0.attn.probs").shape == (1, 12, 197, 197)
    assert rec.tensor("blocks.0.mlp.hidden").shape == (1, 197, 3072)
    assert rec.tensor("cls_rep").shape == (1, 768) and rec.tensor("probs").shape == (1, 1000)


def test_imagenet_weights_offline_fail_with_a_clear_message(monkeypatch):
    def no_network(*args, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setattr(torch.hub, "load_state_dict_from_url", no_network)
    with pytest.raises(UserError, match="could not download torchvision's .*--weights random"):
        _imagenet_vit("b16")


def test_class_names_come_from_torchvision_metadata(vit_run):
    names = vit_run.inputs["class_names"]
    assert len(names) == 1000 and names[0] == "tench"


def _encode(image: Image.Image, fmt: str, **kwargs) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **kwargs)
    return buffer.getvalue()


def _sample() -> Image.Image:
    return Image.open(DEFAULT_IMAGE).convert("RGB").resize((90, 60))


def _exif_rotated() -> bytes:
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: rotate 90° clockwise to display
    return _encode(_sample(), "JPEG", exif=exif)


def _gif() -> bytes:
    frames = [_sample().convert("P"), Image.new("P", (90, 60), 3)]
    buffer = io.BytesIO()
    frames[0].save(buffer, "GIF", save_all=True, append_images=frames[1:])
    return buffer.getvalue()


IMAGES = {
    "photo.jpg": lambda: _encode(_sample(), "JPEG"),
    "photo.png": lambda: _encode(_sample(), "PNG"),
    "photo.webp": lambda: _encode(_sample(), "WEBP"),
    "animated.gif": _gif,
    "rgba.png": lambda: _encode(_sample().convert("RGBA"), "PNG"),
    "grey.png": lambda: _encode(_sample().convert("L"), "PNG"),
    "palette.png": lambda: _encode(_sample().convert("P"), "PNG"),
    "sixteen-bit.png": lambda: _encode(Image.fromarray((np.arange(90 * 60).reshape(60, 90) * 10).astype(np.uint16)), "PNG"),
    "rotated.jpg": _exif_rotated,
    "tall.png": lambda: _encode(Image.new("RGB", (20, 300), (10, 200, 30)), "PNG"),
}


@pytest.mark.parametrize("name", IMAGES)
def test_common_image_kinds_load_as_rgb_and_preprocess_to_224(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(IMAGES[name]())
    image, _ = load_rgb(path)
    assert image.mode == "RGB"
    if name == "rotated.jpg":
        assert image.size == (60, 90)  # EXIF orientation applied
    if name == "sixteen-bit.png":
        assert np.asarray(image).max() == 255  # scaled, not clipped to white
    assert preprocess(image, 224).shape == (1, 3, 224, 224)


def test_a_new_image_gives_26_passing_pages_data(tmp_path):
    path = tmp_path / "photo.png"
    path.write_bytes(IMAGES["photo.png"]())
    run = run_vit(VIT, VitInputs(image=path, device="cpu", size="tiny"))
    assert run.t("image").shape == (1, 3, 32, 32)
    assert run.t("{block}.attn.probs").shape == (1, 3, 65, 65)


@pytest.mark.parametrize("size, tokens", [("tiny", 65), ("b16-384", 577)])
def test_size_presets_are_configuration(size, tokens):
    cfg = PRESETS[size]
    assert cfg.n_patches + 1 == tokens
    model = VisionTransformer(cfg).eval()
    with torch.no_grad():
        assert model(torch.randn(1, 3, cfg.image_size, cfg.image_size)).shape == (1, cfg.n_classes)
