"""The ViT: equal to torchvision's vit_b_16 with the same weights, loads any common image, fails offline cleanly."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image

from transformer_trace.errors import UserError
from transformer_trace.reports.vit.images import DEFAULT_IMAGE, load_rgb, preprocess
from transformer_trace.reports.vit.weights import IMAGENET_MEAN, IMAGENET_STD, PRESETS as WEIGHTS, resolve
from tests.conftest import run_report
from transformer_trace.models.recording import recording
from transformer_trace.models.vit import PRESETS, VisionTransformer, from_torchvision


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
        WEIGHTS["imagenet"].load("b16", PRESETS["b16"], 7)


def test_class_names_come_from_torchvision_metadata(vit_run):
    names = vit_run.inputs["class_names"]
    assert names == list(torchvision.models.ViT_B_16_Weights.IMAGENET1K_V1.meta["categories"])  # the copied list, name for name


def test_the_default_report_runs_without_importing_torchvision():
    """torchvision's import costs seconds (its ops pull in torch._dynamo): only ImageNet weights need it."""
    import subprocess
    import sys

    code = ("import sys; from transformer_trace.reports import REPORTS; from transformer_trace.reports.vit.options import VitOptions; "
            "run = REPORTS['vit'].run(VitOptions(size='tiny', device='cpu')); "
            "assert len(run.inputs['class_names']) == 10; print('torchvision' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=Path(__file__).parent.parent)
    assert result.stdout.strip() == "False"


def test_random_weights_are_made_once_per_seed_and_equal_a_fresh_seeded_initialisation():
    from transformer_trace.reports.vit import weights

    cfg = PRESETS["tiny"]
    first, _ = WEIGHTS["random"].load("tiny", cfg, 11)
    again, _ = WEIGHTS["random"].load("tiny", cfg, 11)  # from the kept tensors
    torch.manual_seed(11)
    fresh = VisionTransformer(cfg)
    assert again is not first and (cfg, 11) in weights._RANDOM_STATE
    for name, tensor in fresh.state_dict().items():
        assert torch.equal(again.state_dict()[name], tensor) and torch.equal(first.state_dict()[name], tensor), name
    other, _ = WEIGHTS["random"].load("tiny", cfg, 12)
    assert not torch.equal(other.pos_embedding, fresh.pos_embedding)


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
    ours = preprocess(image, 224, IMAGENET_MEAN, IMAGENET_STD)
    transforms = torchvision.transforms
    reference = transforms.Compose([transforms.Resize((224, 224), antialias=True), transforms.ToTensor(),
                                    transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD)])(image).unsqueeze(0)
    assert ours.shape == (1, 3, 224, 224) and torch.equal(ours, reference)  # bit-identical to torchvision's pipeline


def test_a_new_image_gives_26_passing_pages_data(tmp_path):
    path = tmp_path / "photo.png"
    path.write_bytes(IMAGES["photo.png"]())
    run = run_report("vit", image=path, size="tiny")
    assert run.t("image").shape == (1, 3, 32, 32)
    assert run.t("{block}.attn.probs").shape == (1, 3, 65, 65)


@pytest.mark.parametrize("size, tokens", [("tiny", 65), ("b16-384", 577)])
def test_size_presets_are_configuration(size, tokens):
    cfg = PRESETS[size]
    assert cfg.n_patches + 1 == tokens
    model = VisionTransformer(cfg).eval()
    with torch.no_grad():
        assert model(torch.randn(1, 3, cfg.image_size, cfg.image_size)).shape == (1, cfg.n_classes)


# ----------------------------------------------------------------------------- --weights PATH


@pytest.fixture(scope="module")
def saved_state_dict(torchvision_vit, tmp_path_factory) -> Path:
    """A torchvision-format state dict saved here, as torchvision caches one after an online run."""
    path = tmp_path_factory.mktemp("weights") / "vit_b_16-local.pth"
    torch.save(torchvision_vit.state_dict(), path)
    return path


def test_weights_path_loads_a_torchvision_state_dict(saved_state_dict, torchvision_vit):
    run = run_report("vit", weights=str(saved_state_dict))
    image = run.cpu("image")
    with torch.no_grad():
        expected = torchvision_vit(image)
    assert torch.allclose(run.cpu("logits"), expected, atol=1e-4)
    assert "vit_b_16-local.pth" in run.weights


@pytest.mark.parametrize("damage, message", [
    (lambda state: state.pop("heads.head.weight"), "key 'heads.head.weight' is missing"),
    (lambda state: state.__setitem__("class_token", torch.zeros(1, 1, 10)), "key 'class_token' has shape (1, 1, 10), expected (1, 1, 768)"),
    (lambda state: state.__setitem__("extra.bias", torch.zeros(3)), "unexpected key 'extra.bias'"),
])
def test_a_mismatched_state_dict_is_refused_naming_the_first_wrong_key(saved_state_dict, tmp_path, damage, message):
    state = torch.load(saved_state_dict)
    damage(state)
    path = tmp_path / "damaged.pth"
    torch.save(state, path)
    with pytest.raises(UserError) as error:
        resolve(str(path)).load("b16", PRESETS["b16"], 7)
    assert message in str(error.value) and "\n" not in str(error.value)


def _nan(state):
    state["encoder.layers.encoder_layer_0.mlp.0.weight"] = torch.full_like(state["encoder.layers.encoder_layer_0.mlp.0.weight"], float("nan"))


def _meta(state):
    state["conv_proj.weight"] = torch.empty(state["conv_proj.weight"].shape, device="meta")


@pytest.mark.parametrize("damage, message", [
    (lambda state: state.__setitem__(7, torch.zeros(3)), "its keys must be parameter names"),
    (_meta, "key 'conv_proj.weight'"),
    (_nan, "key 'encoder.layers.encoder_layer_0.mlp.0.weight' holds 2359296 non-finite values"),
    (lambda state: state.__setitem__("class_token", state["class_token"].to(torch.int64)), "holds torch.int64 values"),
], ids=["non-string key", "meta tensor", "all NaN", "integers"])
def test_a_state_dict_without_usable_values_is_refused_before_the_run(saved_state_dict, tmp_path, capsys, damage, message):
    """Refused in one line while loading (not when figures are drawn), with no warning printed before it."""
    from transformer_trace.cli import main

    state = torch.load(saved_state_dict)
    damage(state)
    path = tmp_path / "damaged.pth"
    torch.save(state, path)
    with pytest.raises(UserError) as error:
        resolve(str(path)).load("b16", PRESETS["b16"], 7)
    assert "\n" not in str(error.value) and ("meta" in str(error.value) or message in str(error.value))
    capsys.readouterr()
    assert main(["build", "--model", "vit", "--weights", str(path), "--out", str(tmp_path / "docs"), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err


@pytest.mark.parametrize("name, make", [
    ("drawing.eps", lambda: b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\nshowpage\n"),
    ("icon.ico", lambda: _encode(_sample(), "ICO")),
    ("scan.tiff", lambda: _encode(_sample(), "TIFF")),
    ("picture.pcx", lambda: _encode(_sample(), "PCX")),
    ("photo.jpg", lambda: _encode(_sample(), "TGA")),  # a misleading name: the content decides
])
def test_only_the_accepted_formats_reach_a_decoder(tmp_path, monkeypatch, name, make):
    """Anything but JPEG, PNG, WebP, GIF or BMP is refused in one line from its first bytes, before any decoder runs."""
    path = tmp_path / name
    path.write_bytes(make())
    opened = []
    monkeypatch.setattr(Image, "open", lambda *args, **kwargs: opened.append(args))
    with pytest.raises(UserError, match=r"is not a JPEG, PNG, WebP, GIF or BMP image \(told from its content"):
        load_rgb(path)
    assert opened == []


def test_a_bmp_is_accepted(tmp_path):
    path = tmp_path / "photo.bmp"
    path.write_bytes(_encode(_sample(), "BMP"))
    assert load_rgb(path)[0].mode == "RGB"


def test_a_weights_value_that_is_neither_preset_nor_file_is_refused(tmp_path):
    with pytest.raises(UserError, match="neither a preset .* nor a file"):
        resolve(str(tmp_path / "missing.pth"))
    (tmp_path / "garbage.pth").write_bytes(b"not a checkpoint")
    with pytest.raises(UserError, match="not a PyTorch state dict"):
        resolve(str(tmp_path / "garbage.pth")).load("b16", PRESETS["b16"], 7)


def test_a_weights_preset_carries_its_preprocessing_and_class_names():
    preset = WEIGHTS["random"]
    assert preset.mean == IMAGENET_MEAN and preset.std == IMAGENET_STD
    assert preset.categories(PRESETS["b16"])[0] == "tench" and preset.categories(PRESETS["tiny"])[3] == "cat"


# ----------------------------------------------------------------------------- attention rollout


def test_attention_rollout_rows_sum_to_1_and_a_corrupted_rollout_fails_its_check():
    from transformer_trace.reports.vit.checks import RolloutRows

    run = run_report("vit", size="tiny")
    rollout = run.inputs["rollout"]  # (B, N1, N1)
    assert rollout.shape == (1, 65, 65)
    assert torch.allclose(rollout.sum(-1), torch.ones(1, 65), atol=1e-5)
    check = RolloutRows(block_probs="blocks.{i}.attn.probs").run(run)
    assert check.passed, check.detail
    run.inputs["rollout"] = rollout.clone()
    run.inputs["rollout"][0, 0, 5] += 0.01
    assert not RolloutRows(block_probs="blocks.{i}.attn.probs").run(run).passed


def test_rollout_of_one_uniform_block_mixes_it_evenly_with_the_identity():
    from transformer_trace.reports.vit.rollout import attention_rollout

    uniform = torch.full((1, 2, 4, 4), 0.25)  # (B, h, N1, N1): every head attends evenly
    expected = 0.5 * torch.full((4, 4), 0.25) + 0.5 * torch.eye(4)
    assert torch.allclose(attention_rollout([uniform])[0], expected)


# ----------------------------------------------------------------------------- preprocessing per weights


@pytest.mark.parametrize("size, weights_enum", [("b16", "ViT_B_16_Weights"), ("l16", "ViT_L_16_Weights")])
@pytest.mark.parametrize("width, height", [(640, 480), (480, 640), (300, 300), (20, 300), (1001, 257)])
def test_imagenet_preprocessing_equals_torchvisions_transforms(size, weights_enum, width, height):
    """Our PIL/torch code gives exactly what IMAGENET1K_V1.transforms() gives (the transforms need no download)."""
    import torchvision.models as tvm

    rng = np.random.default_rng(width * height)
    image = Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))
    expected = getattr(tvm, weights_enum).IMAGENET1K_V1.transforms()(image).unsqueeze(0)
    preset = WEIGHTS["imagenet"]
    ours = preprocess(image, 224, preset.mean, preset.std, preset.resize(size))
    assert torch.equal(ours, expected)


def test_random_weights_squash_the_whole_image_and_imagenet_weights_crop_its_centre(saved_state_dict):
    from transformer_trace.reports.vit.checks import NormalisedImage
    from transformer_trace.sources import Ref

    assert WEIGHTS["random"].resize("b16") is None and WEIGHTS["imagenet"].resize("b16") == 256
    squashed = run_report("vit", size="tiny")
    assert squashed.inputs["crop_box"] is None and "aspect ratio is not kept" in squashed.inputs["preprocessing"]
    cropped = run_report("vit", weights=str(saved_state_dict))  # a torchvision-layout file is prepared like IMAGENET1K_V1
    x0, y0, x1, y1 = cropped.inputs["crop_box"]
    width, height = load_rgb(DEFAULT_IMAGE)[0].size  # 512×600: the shorter side, 512, becomes 256, of which the middle 224 stay
    assert x1 - x0 == pytest.approx(width * 224 / 256) and x0 + x1 == pytest.approx(width)
    assert y1 - y0 == pytest.approx(x1 - x0, abs=1) and y0 + y1 == pytest.approx(height, abs=2)  # centred, to a resized pixel
    for run in (squashed, cropped):
        check = NormalisedImage(out=Ref("image")).run(run)
        assert check.passed, check.detail
