"""The recorded tensors as data: ``<report>/data/<name>.npy`` plus ``data/index.json``.

The snapshot pages show a few numbers of each tensor; the files written here hold all of them,
for the attention explorer and the value browser (generator/assets/tt-explorer.js), and for
anyone who wants to load them with ``numpy.load``.

index.json (every path relative to the report folder, lists sorted, output byte-stable)::

    {"tensors":   [{"name", "file", "shape", "dtype", "labels": [label key or null per axis]}, ...],
     "labels":    {"src_tokens": ["hello", ...], "heads": ["head 1", ...], ...},
     "attention": [{"key", "title", "unit", "layers": [tensor name per layer/block], "rows": label key,
                    "cols": label key, "image": null | {"file": "data/input.png", "grid": 14, "cls": true}}],
     ...extra keys (report, dims)}

Floating-point tensors are stored as float32, integers and booleans as they are; every file is
little-endian, C order, .npy format 1.0, so the same run writes the same bytes.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

DATA_DIR = "data"
INDEX = "index.json"
IMAGE_FILE = "input.png"

# ----------------------------------------------------------------------------- what is explored


@dataclass(frozen=True)
class AttentionGroup:
    """Attention probabilities of one kind, one tensor per layer: what one explorer shows."""

    key: str
    title: str
    unit: str  # "layer" or "block"
    pattern: str  # regular expression over record names; group 1 is the 0-based layer
    rows: str  # label keys of the query and key axes
    cols: str


@dataclass(frozen=True)
class Exploration:
    """What a report ships as data beyond its pages' tensors; defined in generator/reports/<report>/explore.py."""

    names: Callable[[Any], list[str]]  # config -> extra record names: every layer's attention and output
    groups: tuple[AttentionGroup, ...]
    # shape symbol of the model's legend -> label key, e.g. {"S": "src_tokens", "h": "heads"}
    axis_labels: dict[str, str]
    labels: Callable[[Any], dict[str, list[str]]]  # run -> label lists by key
    # run -> (PNG of the model input, patch-grid side, whether a token without a patch, e.g. [CLS], comes first)
    image: Callable[[Any], tuple[bytes, int, bool] | None] = lambda run: None


def exploration_names(report: Any, config: Any) -> list[str]:
    """Record names the explorer needs beyond the pages' own; the runners add them to what they keep."""
    return report.exploration.names(config) if report.exploration else []


class UnlabelledAxis(ValueError):
    """An explorer declaration that does not fit the run: a declared axis whose label list is missing or has another
    length than the axis (the explorer would number the axis, or label it wrongly, without a word)."""


def axis_labels(exploration: Exploration, named: tuple[str, ...] | None, shape: tuple[int, ...],
                labels: dict[str, list[str]], name: str = "") -> tuple[str | None, ...]:
    """Label key (or None) per axis, read from the tensor's declared named shape (``named``, None when undeclared):
    the exploration's key for the axis's symbol. A declared key without its label list, or with a list of another
    length than the axis, is an ``UnlabelledAxis`` naming it."""
    if named is None or len(named) != len(shape):
        return (None,) * len(shape)
    keys = tuple(exploration.axis_labels.get(symbol) for symbol in named)
    for symbol, key, size in zip(named, keys, shape):
        if key is not None:
            check_labels(labels, key, size, f"{name or 'a tensor'}: axis {symbol}")
    return keys


def check_labels(labels: dict[str, list[str]], key: str, size: int, where: str) -> None:
    """Raise ``UnlabelledAxis`` unless ``labels[key]`` labels an axis of ``size`` entries."""
    if key not in labels:
        raise UnlabelledAxis(f"{where} is labelled {key!r}, but the run has no label list {key!r} "
                             f"(it has: {', '.join(sorted(labels)) or 'none'})")
    if len(labels[key]) != size:
        raise UnlabelledAxis(f"{where} has {size} entries, but its labels {key!r} are {len(labels[key])}")


def attention_group_of(exploration: Exploration | None, name: str) -> tuple[str, int] | None:
    """(group key, 0-based layer) when ``name`` is an attention-probability tensor the explorer shows."""
    for group in exploration.groups if exploration else ():
        if match := re.fullmatch(group.pattern, name):
            return group.key, int(match.group(1))
    return None


def attention_groups(exploration: Exploration, names: list[str],
                     image: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    groups = []
    for group in exploration.groups:
        layers = sorted((int(m.group(1)), n) for n in names if (m := re.fullmatch(group.pattern, n)))
        if layers:
            groups.append({"key": group.key, "title": group.title, "unit": group.unit, "layers": [n for _, n in layers],
                           "rows": group.rows, "cols": group.cols, "image": image})
    return groups


# ----------------------------------------------------------------------------- writing


def npy_bytes(tensor: torch.Tensor) -> bytes:
    """The tensor as .npy (format 1.0, little-endian, C order): float as float32, int and bool unchanged."""
    t = tensor.detach().cpu()
    if t.is_floating_point():
        t = t.to(torch.float32)
    array = np.ascontiguousarray(t.numpy())
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, version=(1, 0), allow_pickle=False)
    return buffer.getvalue()


def write_tensor_data(report_dir: Path, tensors: dict[str, torch.Tensor], *, labels: dict[str, list[str]],
                      axes: dict[str, tuple[str | None, ...]], attention: list[dict],
                      extra: dict | None = None) -> dict:
    """Write ``report_dir/data/<name>.npy`` for every tensor and ``data/index.json``; return the index."""
    data = report_dir / DATA_DIR
    data.mkdir(parents=True, exist_ok=True)
    entries = []
    for name in sorted(tensors):
        if "/" in name or name.startswith("."):
            raise ValueError(f"record name {name!r} cannot be a file name")
        blob = npy_bytes(tensors[name])
        file = f"{DATA_DIR}/{name}.npy"
        (report_dir / file).write_bytes(blob)
        array = np.load(io.BytesIO(blob), mmap_mode=None, allow_pickle=False)
        keys = list(axes.get(name, (None,) * array.ndim))
        if len(keys) != array.ndim:
            raise ValueError(f"{name}: {len(keys)} axis labels for {array.ndim} axes")
        entries.append({"name": name, "file": file, "shape": list(array.shape), "dtype": array.dtype.str,
                        "labels": keys})
    used = sorted({k for e in entries for k in e["labels"] if k} | {g[k] for g in attention for k in ("rows", "cols")})
    missing = [k for k in used if k not in labels]
    if missing:
        raise ValueError(f"label lists missing: {missing}")
    for group in attention:
        unknown = [n for n in group["layers"] if n not in tensors]
        if unknown:
            raise ValueError(f"attention group {group['key']}: tensors not written: {unknown}")
        for layer in group["layers"]:  # the explorer labels its rows and columns with these lists: they must fit
            where = f"attention group {group['key']}: {layer}'s"
            check_labels(labels, group["rows"], tensors[layer].shape[-2], f"{where} query axis")
            check_labels(labels, group["cols"], tensors[layer].shape[-1], f"{where} key axis")
    index = {"tensors": entries, "labels": {k: [str(v) for v in labels[k]] for k in used}, "attention": attention,
             **(extra or {})}
    (data / INDEX).write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return index


# ----------------------------------------------------------------------------- from a run


def image_png(image: torch.Tensor, mean: tuple[float, ...], std: tuple[float, ...]) -> bytes:
    """A normalised image (1, 3, H, W) as the model saw it, back in 8-bit RGB (no metadata, no timestamp)."""
    from PIL import Image

    rgb = (image[0].float().cpu() * torch.tensor(std).view(3, 1, 1) + torch.tensor(mean).view(3, 1, 1))
    pixels = rgb.clamp(0, 1).mul(255).round().to(torch.uint8).permute(1, 2, 0).numpy()  # (3, H, W) -> (H, W, 3)
    buffer = io.BytesIO()
    Image.fromarray(pixels, mode="RGB").save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def run_labels(exploration: Exploration, run: Any) -> dict[str, list[str]]:
    """The run's label lists by key: the heads, and what the report's exploration reads of the run."""
    return head_labels(run.dims) | exploration.labels(run)


def head_labels(dims: Any) -> dict[str, list[str]]:
    """The attention heads' labels ("head 1" ...), where the run has heads."""
    return {"heads": [f"head {i + 1}" for i in range(dims["h"])]} if "h" in dims else {}


def write_run_data(report: Any, run: Any, pages: list, out: Path) -> dict:
    """Every tensor the pages show plus each layer's attention and output, for the explorer."""
    exploration = report.exploration or Exploration(names=lambda config: [], groups=(), axis_labels={},
                                                    labels=lambda run: {})
    extra = [n for n in exploration.names(run.inputs["config"]) if n in run.recording]
    names = sorted({t.name for p in pages for t in p.tensors} | set(extra))
    tensors = {n: run.cpu(n) for n in names}
    labels = run_labels(exploration, run)
    declared = run.declared
    axes = {n: axis_labels(exploration, declared[n].shape if n in declared else None, tuple(t.shape), labels, n)
            for n, t in tensors.items()}
    image = None
    if picture := exploration.image(run):
        png, grid, leading_token = picture
        (out / DATA_DIR).mkdir(parents=True, exist_ok=True)
        (out / DATA_DIR / IMAGE_FILE).write_bytes(png)
        image = {"file": f"{DATA_DIR}/{IMAGE_FILE}", "grid": grid, "cls": leading_token}
    return write_tensor_data(out, tensors, labels=labels, axes=axes,
                             attention=attention_groups(exploration, names, image),
                             extra={"report": report.key, "dims": dict(run.dims)})


# ----------------------------------------------------------------------------- for the templates


def explore_info(page: Any) -> dict[str, Any]:
    """What _explore.md.j2 needs for a snapshot page: its tensors' files and its explorer group."""
    depth = page.path.count("/")
    names = list(dict.fromkeys(t.name for t in page.tensors))
    group = attention_group_of(page.report.exploration, page.record) if page.record else None
    return {
        "tensors": names,
        "files": {n: "../" * depth + f"{DATA_DIR}/{n}.npy" for n in names},  # Markdown links: relative to the .md file
        # Raw HTML is not rewritten by MkDocs: relative to the page's URL (directory URLs: one level deeper).
        "index": "../" * (depth + 1) + f"{DATA_DIR}/{INDEX}",
        "index_link": "../" * depth + f"{DATA_DIR}/{INDEX}",  # the same file, as a Markdown link
        "group": group[0] if group else None,
        "layer": group[1] if group else None,
    }
