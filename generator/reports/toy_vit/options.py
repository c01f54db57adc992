"""The toy ViT report's options: the 6×6 image and the weights, with the seed's as defaults."""

from __future__ import annotations

from dataclasses import dataclass, field

from transformer_trace.errors import UserError
from transformer_trace.options import RunOptions, option
from transformer_trace.models.toy_vit import ToyViTConfig, ToyVisionTransformer

PIXELS = 36  # a 6×6 image, row by row
WEIGHTS = ("seed", "random")


@dataclass(frozen=True)
class ToyVitOptions(RunOptions):
    pixels: str = field(default="", metadata=option(
        "36 pixel intensities in [0, 1], row by row, separated by spaces or commas; empty: the seed's 6×6 image",
                                                    kind="text",
        form={"label": "Pixels", "type": "text", "current": "pixels_text",
              "hint": "36 numbers in [0, 1], row by row; empty: the seed's image"}))
    weights: str = field(default="seed", metadata=option(
        "seed (E, [CLS], positions, MLP and head as the seed prints them; identity attention and LayerNorm) "
        "or random (every weight drawn with --seed)", choices=WEIGHTS))

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_layer("layers")
        if self.weights not in WEIGHTS:  # --weights is shared with other reports, so the parser cannot hold it to these
            raise UserError(f"--weights {self.weights!r} is not one of the toy ViT's: {', '.join(WEIGHTS)}")
        self.image_rows()  # refuse a bad --pixels before anything runs

    @classmethod
    def example_change(cls) -> list[str]:
        return ["--weights", "random"]

    def image_rows(self) -> list[list[float]] | None:
        """The --pixels image as six rows of six intensities, or None for the seed's."""
        if not self.pixels.strip():
            return None
        words = self.pixels.replace(",", " ").split()
        if len(words) != PIXELS:
            raise UserError(f"--pixels takes {PIXELS} numbers (a 6×6 image, row by row); got {len(words)}")
        try:
            values = [float(w) for w in words]
        except ValueError:
            bad = next(w for w in words if not _is_number(w))
            raise UserError(f"--pixels: {bad!r} is not a number") from None
        if not all(0.0 <= v <= 1.0 for v in values):
            raise UserError("--pixels: every intensity must be between 0 (black) and 1 (white)")
        return [values[r * 6:(r + 1) * 6] for r in range(6)]

    def config(self) -> ToyViTConfig:
        return ToyViTConfig()

    def n_layers(self) -> int:
        return self.config().n_layers

    def layer_places(self, layer: int) -> dict[str, str]:
        return {"block": f"blocks.{layer - 1}"}

    def build_model(self) -> ToyVisionTransformer:
        return ToyVisionTransformer(self.config())


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True
