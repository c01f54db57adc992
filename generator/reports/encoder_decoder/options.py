"""The encoder–decoder report's options: two sentences and the model's sizes (defaults from its config)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from transformer_trace.errors import UserError
from transformer_trace.options import RunOptions, check_heads_divide, check_memory, config_default, option, plural
from transformer_trace.text import clean_text, removed_characters
from transformer_trace.models.encoder_decoder import EncoderDecoderConfig, EncoderDecoderTransformer, build_vocab

DEFAULT_SRC = "hello from cairo egypt team project"  # the seed report's sentences
DEFAULT_TGT = "we are debugging transformer today"
MAX_WORDS = config_default(EncoderDecoderConfig, "max_len")
# built on the CPU in well under a second, 40 MB: listing its record points (see record_points)
SMALL_MODEL_PARAMETERS = 10_000_000


@dataclass(frozen=True)
class EncoderDecoderOptions(RunOptions):
    src: str = field(default=DEFAULT_SRC, metadata=option("source sentence", kind="text", form={
        "label": "Source sentence", "type": "text", "hint": "the encoder's input, words separated by spaces"}))
    tgt: str = field(default=DEFAULT_TGT, metadata=option("target sentence", kind="text", form={
        "label": "Target sentence", "type": "text", "hint": "the decoder's input (teacher forcing)"}))
    layers: int = field(
        default=config_default(EncoderDecoderConfig, "n_encoder_layers"),
        metadata=option("encoder and decoder layers", kind="positive"),
    )
    d_model: int = field(default=config_default(EncoderDecoderConfig, "d_model"),
                         metadata=option("model width", kind="positive"))
    heads: int = field(default=config_default(EncoderDecoderConfig, "n_heads"), metadata=option("attention heads (must "
                                                                                                "divide --d-model)",
                                                                                                kind="positive"))
    d_ff: int = field(default=config_default(EncoderDecoderConfig, "d_ff"),
                      metadata=option("feed-forward width", kind="positive"))
    # Control and bidirectional-override characters dropped from the sentences (see generator/text.py), for the pages.
    removed: tuple[str, ...] = field(default=(), init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "removed", tuple(removed_characters(self.src + self.tgt)))
        object.__setattr__(self, "src", _sentence(self.src, "src"))
        object.__setattr__(self, "tgt", _sentence(self.tgt, "tgt"))
        check_heads_divide(self.d_model, self.heads)
        self.check_layer("layers")
        C, F, L = self.d_model, self.d_ff, self.layers
        check_memory(4 * (self.n_parameters() + MAX_WORDS * C), f"--d-model {C} with --d-ff {F} and --layers {L}")

    def n_parameters(self) -> int:
        """About how many weights the model has (attention and feed-forward layers, embeddings)."""
        C, F, L = self.d_model, self.d_ff, self.layers
        return (
            L * (4 * C * C + 2 * C * F)
            + L * (8 * C * C + 2 * C * F)
            + C * (len(self.src.split()) + 2 * len(self.tgt.split()))
        )

    @classmethod
    def limit_example(cls) -> tuple[str, list[str]]:
        words = lambda prefix: " ".join(f"{prefix}{i}" for i in range(MAX_WORDS))  # noqa: E731
        return f"{MAX_WORDS}-word source and target sentences", ["--src", words("s"), "--tgt", words("t")]

    @classmethod
    def example_change(cls) -> list[str]:
        return ["--src", "a brand new source sentence"]

    def config(self) -> EncoderDecoderConfig:
        return EncoderDecoderConfig(
            src_vocab_size=len(build_vocab(self.src)), tgt_vocab_size=len(build_vocab(self.tgt)), d_model=self.d_model,
            n_heads=self.heads, d_ff=self.d_ff, n_encoder_layers=self.layers, n_decoder_layers=self.layers,
        )

    def n_layers(self) -> int:
        return self.layers

    NAMED_PASSES = {"dec_last": (-1, "{dec}")}  # the last decoder layer: its output is the decoder's

    def layer_places(self, layer: int) -> dict[str, str]:
        layer -= 1
        return {
            "enc": f"encoder.layers.{layer}",
            "dec": f"decoder.layers.{layer}",
            "enc_prev": "src_with_pos" if layer == 0 else f"encoder.layers.{layer - 1}.output",
            "dec_prev": "tgt_with_pos" if layer == 0 else f"decoder.layers.{layer - 1}.output",
        }

    def build_model(self) -> EncoderDecoderTransformer:
        return EncoderDecoderTransformer(self.config())

    def record_points(self) -> dict[str, Any]:
        """Declared on a model built on the CPU when it is small (the default one takes milliseconds), with PyTorch's
        random state left as it was: on the meta device its positional table's first operation imports torch._dynamo,
        about 1.5 s of a trace's page time. A large one is built on the meta device, as every report's is."""
        if self.n_parameters() > SMALL_MODEL_PARAMETERS:
            return super().record_points()
        import torch

        from transformer_trace.models.recording import declared_points

        with torch.random.fork_rng(devices=[]):
            return declared_points(self.build_model())


def _sentence(text: str, which: str) -> str:
    words = clean_text(text).split()
    if not words:
        raise UserError(f"the {which} sentence is empty; give at least one word, e.g. --{which} \"hello world\"")
    if len(words) > MAX_WORDS:
        raise UserError(f"the {which} sentence has {plural(len(words), 'word')}, more than the {MAX_WORDS} this model "
                        "supports; shorten it")
    return " ".join(words)
