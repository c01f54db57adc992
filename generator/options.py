"""Run options: what every report takes (seed, device, layer) and how a report declares its own.

A report's options are a frozen dataclass derived from ``RunOptions``. Each field carries its
command-line help in its metadata (``option(...)``); the CLI adds one flag per field, with the
field's type, default and choices, so a report's defaults live in one place: its dataclass,
which takes them from the model's config dataclass and preset tables.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import Field, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from transformer_trace.errors import UserError

SEED_LIMIT = 2**63  # torch.manual_seed takes a signed 64-bit integer
# The most a whole-number option ("positive": sizes, counts, layer numbers) takes: every sensible value is far below it,
# so a typo's extra digits are refused at once, in a short line (sizes are refused well before by the memory check).
POSITIVE_LIMIT = 1_000_000


def option(help: str, *, flag: str | None = None, choices: tuple[str, ...] | None = None, kind: str | None = None,
           form: dict[str, Any] | None = None, api_values: tuple[str, ...] = ()) -> dict[str, Any]:
    """Field metadata that makes a dataclass field a command-line option.

    ``kind`` picks the parser: "int" (any integer), "positive" (an integer >= 1), "seed", "path", "text".
    ``form`` puts the option on the regenerate form of `python -m transformer_trace serve`: its "label", "type"
    (text, number, file), "hint", and optionally "accept", "min" and "current" (the snapshots.json input
    the form starts from, when it is not the field's own name).
    ``api_values``: for free text of no kind (a value that could name a file or a download), the only values the
    server's regenerate API takes (generator/site/forms.py); none by default, so the API cannot set it.
    """
    return {"help": help, "flag": flag, "choices": choices, "kind": kind, "form": form, "api_values": api_values}


def flag_of(f: Any) -> str:
    """The command-line flag of an options field: its metadata's, else --<name with dashes>."""
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


# ----------------------------------------------------------------------------- argument types


def positive_int(text: str) -> int:
    return bounded_int(text, 1, POSITIVE_LIMIT)


def bounded_int(text: str, low: int, high: int) -> int:
    """``text`` as a whole number from ``low`` to ``high``; refused naming the limit it is beyond."""
    span = f"choose a whole number from {low:,} to {high:,}"
    value = _integer(text, span)
    if value < 1 <= low:
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a positive whole number")
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"{shown(text)} is out of range: {span}")
    return value


def seed_int(text: str) -> int:
    span = "a seed is a whole number from 0 to 2**63 - 1"
    value = _integer(text, span)
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"{shown(text)} is out of range: {span}")
    return value


def _integer(text: str, span: str = "far too large a number") -> int:
    try:
        return int(text)
    except ValueError:
        # more digits than int() reads (sys.get_int_max_str_digits): out of any range
        if text.strip().lstrip("+-").isdigit():
            raise argparse.ArgumentTypeError(f"{shown(text)} is out of range: {span}") from None
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a whole number") from None


def shown(text: str, most: int = 24) -> str:
    """``text`` quoted for a message, its middle cut when it is long: a typed value never makes a message unreadable."""
    if len(text) <= most:
        return repr(text)
    return f"{text[:most // 2]!r}…{text[-most // 2:]!r} ({len(text):,} characters)"


def text(value: str) -> str:
    """User text: any Unicode, but whole characters only. Undecodable bytes in argv (Python keeps them as lone
    surrogates) and lone surrogates sent through the API cannot be written to a page, so they are refused here."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise argparse.ArgumentTypeError(f"is not valid UTF-8 text (character {exc.start + 1} is an undecodable byte "
                                         "or a lone surrogate)") from None
    return value


def path(value: str) -> Path:
    return Path(text(value))


def out_path(value: str) -> Path:
    """An --out value: a path named; an empty one is refused (Path("") would be the current folder)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("expected a path, not an empty name (for the current folder, give .)")
    return path(value)


def refuse_a_missing_file(path: Path, name: str, flag: str) -> None:
    """A path option that names nothing, refused in one line. The CLI checks its flags so before PyTorch loads
    (arguments.build_request); the report reading the file checks again, for the plugin and the server."""
    if not path.exists():
        raise UserError(f"{name} not found: {path}; check the path given to {flag}")


PARSERS = {"int": _integer, "positive": positive_int, "seed": seed_int, "path": path, "text": text, None: text}


def option_kind(f: Field) -> str | None:
    """Which of PARSERS reads an options field: its metadata's ``kind``, else "int" for an int field, else text."""
    return f.metadata.get("kind") or ("int" if f.type in (int, "int") else None)


class OptionRefused(UserError):
    """A value an option does not take, in the command line's words whichever face it came through: ``flag`` and the
    ``problem`` ("'x' is not a whole number"); the message is the CLI's line (argparse words it the same way)."""

    def __init__(self, flag: str, problem: str) -> None:
        super().__init__(f"argument {flag}: {problem} (see --help)")
        self.flag = flag
        self.problem = problem


def choice(flag: str, value: object, choices: Sequence[object]) -> None:
    """Refuse ``value`` unless it is one of ``choices`` (argparse's own words)."""
    if value not in choices:
        raise OptionRefused(flag, f"invalid choice: {value!r} (choose from {', '.join(map(repr, choices))})")


def option_value(f: Field, text_value: str) -> Any:
    """An options field's value read from text as the command line reads its flag (the plugin's and the server's
    values too): its kind's parser, then its choices; an OptionRefused names the flag and the problem."""
    flag, parse = flag_of(f), PARSERS[option_kind(f)]
    try:
        value = parse(text_value)
    except argparse.ArgumentTypeError as exc:
        raise OptionRefused(flag, str(exc)) from None
    except (TypeError, ValueError):
        raise OptionRefused(flag, f"invalid {parse.__name__} value: {text_value!r}") from None
    if f.metadata.get("choices"):
        choice(flag, value, f.metadata["choices"])
    return value


# ----------------------------------------------------------------------------- options


@dataclass(frozen=True)
class RunOptions:
    """What every report takes. Subclasses add their inputs and model sizes, and know their model's layout."""

    seed: int = field(default=7, metadata=option("torch.manual_seed for the random weights; 7 reproduces the seed "
                                                 "reports", kind="seed",
                                                 form={"label": "Seed", "type": "number", "hint": "torch.manual_seed "
                                                                                                  "for the random "
                                                                                                  "weights"}))
    device: str = field(default="auto",
                        metadata=option("auto = CUDA when PyTorch sees a GPU, else CPU",
                                        choices=("auto", "cpu", "cuda")))
    layer: int = field(default=1,
                       metadata=option("which layer/block the detailed pages trace, 1-based", kind="positive",
                                                  form={"label": "Layer traced", "type": "number", "min": 1,
                                                        "hint": "which layer or block the detailed pages follow (1 = "
                                                                "first)"}))

    def __post_init__(self) -> None:
        if not 0 <= self.seed < SEED_LIMIT:
            raise UserError(f"--seed {self.seed} is out of range: a seed is a whole number from 0 to 2**63 - 1")
        if self.device not in ("auto", "cpu", "cuda"):
            raise UserError(f"unknown device {self.device!r}; choose auto, cpu or cuda")
        from dataclasses import fields

        for f in fields(self):  # sizes and counts the parser takes as positive, also when the options are built in code
            if f.metadata.get("kind") == "positive" and not 1 <= getattr(self, f.name) <= POSITIVE_LIMIT:
                raise UserError(f"{flag_of(f)} {shown(str(getattr(self, f.name)))} is out of range: "
                                f"choose a whole number from 1 to {POSITIVE_LIMIT:,}")

    # A report's options know its model's layout, so catalogues can be checked without running a model.

    def n_layers(self) -> int:
        """How many layers/blocks --layer may choose from."""
        raise NotImplementedError

    # The catalogue's placeholders that name one pass of the layer loop, not the traced layer's: placeholder ->
    # (which pass, 1-based or negative from the last; the place as that pass's placeholders write it), e.g.
    # {"block_last": (-1, "{block}")}. A model run counts the passes in its model's depth; a trace, in the passes the
    # script ran (generator/trace/reading/records.py places_at_layer).
    NAMED_PASSES: ClassVar[Mapping[str, tuple[int, str]]] = {}

    def layer_places(self, layer: int) -> dict[str, str]:
        """The catalogue's record-name placeholders for pass ``layer`` (1-based) of the layer loop: that layer's own
        places and what feeds it (e.g. {"block": "blocks.0", "block_prev": "tokens_pos"})."""
        raise NotImplementedError

    def named_pass(self, name: str, passes: int) -> int | None:
        """Which pass (1-based) the named pass ``name`` is in a loop of ``passes`` passes; None where it is none of
        them (the second of one pass, the last of none)."""
        which = self.NAMED_PASSES[name][0]
        chosen = which if which > 0 else passes + 1 + which
        return chosen if 1 <= chosen <= passes else None

    def pass_place(self, name: str, layer: int) -> str:
        """The named pass ``name``'s place where it is pass ``layer`` of the loop."""
        from transformer_trace.sources import fill  # here: the site's machinery imports the options, not PyTorch

        return fill(self.NAMED_PASSES[name][1], self.layer_places(layer))

    def places(self) -> dict[str, str]:
        """Values of the catalogue's record-name placeholders for the traced layer, and for the named passes of the
        model's depth (a pass beyond a shallower model's last: its last)."""
        places = self.layer_places(self.layer)
        for name in self.NAMED_PASSES:
            places[name] = self.pass_place(name, self.named_pass(name, self.n_layers()) or self.n_layers())
        return places

    def config(self) -> Any:
        """The model's configuration (its sizes and layout) for these options."""
        raise NotImplementedError

    def build_model(self) -> Any:
        """The report's model for these options, with untrained weights (``record_points`` builds it on the meta
        device)."""
        raise NotImplementedError

    def record_points(self) -> dict[str, Any]:
        """The model's declared record points for these options: full record name ->
        ``transformer_trace.models.recording.Declared``.

        Read from the model's ``Point`` declarations (models/recording.py) on a model built on the meta
        device: no weights are allocated and nothing is run.
        """
        import torch

        from transformer_trace.models.recording import declared_points

        with torch.device("meta"):
            model = self.build_model()
        return declared_points(model)

    @classmethod
    def limit_example(cls) -> tuple[str, list[str]] | None:
        """(what, flags) of an input at this report's documented limit, for the benchmark page."""
        return None

    @classmethod
    def example_change(cls) -> list[str]:
        """Command-line flags for a new input of this report (benchmarks and tests regenerate with them)."""
        return []

    def check_layer(self, what: str = "layers") -> None:
        n = self.n_layers()
        if not 1 <= self.layer <= n:
            span = "only layer 1" if n == 1 else f"{what} 1 to {n}"
            raise UserError(f"--layer {self.layer} is out of range; this model has {span}")


def check_heads_divide(d_model: int, heads: int) -> None:
    """Multi-head attention splits d_model features into equal heads."""
    if d_model % heads:
        raise UserError(f"--heads {heads} must divide --d-model {d_model} (each head gets d_model / heads features)")


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """'1 word', '2 words'."""
    return f"{count} {singular if count == 1 else plural_form or singular + 's'}"


def config_default(config: type, name: str) -> Any:
    """The default of field ``name`` of a config dataclass: option defaults come from the model's config."""
    from dataclasses import fields

    return next(f.default for f in fields(config) if f.name == name)


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux: MemAvailable), or None when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def check_memory(n_bytes: int, what: str) -> None:
    """Refuse, before allocating, a model whose weights and activations would not fit in memory."""
    available = available_memory()
    if available is not None and n_bytes > 0.8 * available:
        raise UserError(f"{what} would need about {readable_size(n_bytes)} of memory, and this machine has "
                        f"{readable_size(available)} available; choose smaller sizes")


def readable_size(n_bytes: int) -> str:
    """A size in a few characters, however large the integer: '512 MB', '3.2 TB', and beyond a thousand exabytes a
    power of ten ('2.7 × 10^44 bytes'). KB, MB... are powers of 1024, as the machine counts its memory."""
    for power, unit in enumerate(("MB", "GB", "TB", "PB", "EB"), start=2):
        if n_bytes < 1000 * 1024**power:
            return f"{n_bytes / 1024**power:.{0 if unit == 'MB' else 1}f} {unit}"
    exponent = int(math.log10(n_bytes))  # math.log10 takes an integer of any size; int / int below too
    mantissa = round(n_bytes / 10**exponent, 1)
    while mantissa >= 10:  # log10 rounded up, or 9.96 rounded to 10.0
        exponent, mantissa = exponent + 1, round(n_bytes / 10 ** (exponent + 1), 1)
    while mantissa < 1:  # log10 rounded down past a power of ten
        exponent, mantissa = exponent - 1, round(n_bytes / 10 ** (exponent - 1), 1)
    return f"{mantissa} × 10^{exponent} bytes"


# Files uploaded to `python -m transformer_trace serve`: the server's temporary copy -> the name the user gave it. The
# command a page shows names the user's file, not the server's copy (deleted once the build is done).
UPLOADED: ContextVar[dict[str, str]] = ContextVar("uploaded", default={})


def command_line(key: str, opts: RunOptions) -> str:
    """The `build` command that reproduces ``opts``: every option that differs from its default, shell-quoted."""
    import shlex
    from dataclasses import fields

    words, uploaded = ["python", "-m", "transformer_trace", "build", "--model", key], []
    for f in fields(opts):
        value = getattr(opts, f.name)
        if f.init and f.name != "device" and (value != f.default or f.name in ("seed", "layer")) and value is not None:
            if str(value) in UPLOADED.get():
                value = UPLOADED.get()[str(value)]
                uploaded.append(value)
            words += [flag_of(f), shlex.quote(str(value))]
    note = (
        f"  # {', '.join(map(shlex.quote, uploaded))}: uploaded to the server; give the path of your copy"
        if uploaded
        else ""
    )
    return " ".join(words) + note
