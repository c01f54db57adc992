"""Load any common image as RGB and preprocess it for the ViT: resize (or resize and centre-crop), scale to [0, 1],
normalise.

The preprocessing is written here with PIL and torch, the same steps torchvision's transforms take on a PIL image
(bilinear PIL resize, crop offsets rounded as ``torchvision.transforms.functional.center_crop`` rounds them), so a
report does not import torchvision to prepare its input; tests compare the two.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import torch
from PIL import Image, ImageOps, UnidentifiedImageError

from transformer_trace.errors import UserError
from transformer_trace.options import refuse_a_missing_file

DEFAULT_IMAGE = Path(__file__).resolve().parent / "assets" / "default-image.jpg"
MAX_PIXELS = 40_000_000  # ~ a 7700 x 5200 photo; larger files are refused, not decoded

# The formats an image may be in, told from the file's first bytes (never from its name): only these decoders of
# Pillow ever see a user's file. Others (PostScript, which Pillow hands to Ghostscript, and the many formats Pillow
# reads only in part) are refused before decoding.
ACCEPTED = "JPEG, PNG, WebP, GIF or BMP"
_SIGNATURES = ((b"\xff\xd8\xff", "JPEG"), (b"\x89PNG\r\n\x1a\n", "PNG"), (b"GIF87a", "GIF"), (b"GIF89a", "GIF"),
               (b"BM", "BMP"))


def image_format(path: Path) -> str | None:
    """The accepted format ``path`` is in, by its content; None for anything else."""
    with path.open("rb") as f:
        head = f.read(16)
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WEBP"
    return next((name for magic, name in _SIGNATURES if head.startswith(magic)), None)


def load_rgb(path: Path) -> tuple[Image.Image, str]:
    """The first frame of ``path`` as an 8-bit RGB image (EXIF rotation applied), and its original mode."""
    refuse_a_missing_file(path, "image", "--image")
    if path.is_dir():
        raise UserError(f"{path} is a folder; --image needs an image file")
    if not path.is_file():  # a FIFO, a device such as /dev/zero, a socket: nothing PIL should read from
        raise UserError(f"{path} is not a regular file; --image needs an image file ({ACCEPTED})")
    if path.stat().st_size == 0:
        raise UserError(f"{path} is empty (0 bytes); give a {ACCEPTED} image")
    try:
        fmt = image_format(path)
    except OSError as exc:
        raise UserError(f"{path} could not be read ({exc.strerror or exc}); check its permissions") from None
    if fmt is None:
        raise UserError(f"{path} is not a {ACCEPTED} image (told from its content, not its name); convert it to one of "
                        "these")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            previous, Image.MAX_IMAGE_PIXELS = Image.MAX_IMAGE_PIXELS, MAX_PIXELS
            try:
                with Image.open(path, formats=[fmt]) as im:  # that format's decoder only
                    mode = im.mode
                    im.seek(0)  # animated GIF/WebP: the first frame
                    im.load()
                    return _to_rgb(ImageOps.exif_transpose(im)), mode
            finally:
                Image.MAX_IMAGE_PIXELS = previous
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise UserError(f"{path} is too large to decode safely (over {MAX_PIXELS:,} pixels); resize it first") from None
    except UnidentifiedImageError:
        raise UserError(f"{path} is not an image PIL can read; give a {ACCEPTED} file") from None
    except (OSError, SyntaxError, ValueError) as exc:
        raise UserError(f"{path} could not be decoded ({exc}); the file may be truncated or corrupt") from None


def _to_rgb(im: Image.Image) -> Image.Image:
    if im.mode in ("I;16", "I;16B", "I;16L", "I"):
        # 16/32-bit grey: scale to 8 bits by the file's own range, not by clipping.
        values = np.asarray(im, dtype=np.float64)
        top = values.max() or 1.0
        im = Image.fromarray((values / top * 255).round().astype(np.uint8), mode="L")
    if im.mode == "P":
        im = im.convert("RGBA")
    if im.mode in ("RGBA", "LA", "PA"):
        background = Image.new("RGBA", im.size, (255, 255, 255, 255))  # transparency shown over white
        return Image.alpha_composite(background, im.convert("RGBA")).convert("RGB")
    return im.convert("RGB")


def resized_shorter_side(width: int, height: int, shorter: int) -> tuple[int, int]:
    """(width, height) with the shorter side scaled to ``shorter`` and the aspect kept (the longer side truncated,
    as torchvision does)."""
    if width <= height:
        return shorter, int(shorter * height / width)
    return int(shorter * width / height), shorter


def crop_box(width: int, height: int, resize: int, crop: int) -> tuple[float, float, float, float]:
    """The centre crop of ``crop``×``crop`` after resizing the shorter side to ``resize``, in the original image's
    pixels."""
    new_w, new_h = resized_shorter_side(width, height, resize)
    left, top = int(round((new_w - crop) / 2.0)), int(round((new_h - crop) / 2.0))
    sx, sy = width / new_w, height / new_h
    return left * sx, top * sy, (left + crop) * sx, (top + crop) * sy


def model_input(image: Image.Image, size: int, resize: int | None = None) -> Image.Image:
    """The ``size``×``size`` RGB image the model sees: squashed to size×size (``resize`` None), or the shorter side
    resized to ``resize`` (bilinear) and the centre ``size``×``size`` cropped, as ImageNet-trained weights expect."""
    if resize is None:
        return image.resize((size, size), Image.Resampling.BILINEAR)
    if resize < size:
        raise ValueError(f"resizing the shorter side to {resize} leaves nothing to crop {size}×{size} from")
    resized = image.resize(resized_shorter_side(image.width, image.height, resize), Image.Resampling.BILINEAR)
    left, top = int(round((resized.width - size) / 2.0)), int(round((resized.height - size) / 2.0))
    return resized.crop((left, top, left + size, top + size))


def preprocess(image: Image.Image, size: int, mean: tuple[float, ...], std: tuple[float, ...],
               resize: int | None = None) -> torch.Tensor:
    """RGB -> ``model_input`` -> [0, 1] -> per-channel (x - mean) / std: (1, 3, size, size).

    The same operations, in the same order and dtype, as torchvision's Resize (PIL bilinear, antialiased), CenterCrop,
    ToTensor and Normalize, so the tensor is bit-identical; written out because importing torchvision costs seconds
    (tests/test_vit.py compares the two).
    """
    pixels = torch.from_numpy(np.asarray(model_input(image, size, resize), dtype=np.uint8).copy())  # (H, W, 3)
    x = pixels.permute(2, 0, 1).float().div(255)  # (H, W, 3) -> (3, H, W), in [0, 1]
    mean_t = torch.tensor(mean, dtype=torch.float32).view(3, 1, 1)
    std_t = torch.tensor(std, dtype=torch.float32).view(3, 1, 1)
    return ((x - mean_t) / std_t).unsqueeze(0)  # (3, H, W) -> (1, 3, H, W)
