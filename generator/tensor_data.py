"""The recorded tensors as data: ``<report>/data/<name>.npy`` plus ``data/index.json``.

The snapshot pages show a few numbers of each tensor; the files written here hold all of them,
for the attention explorer and the value browser (docs/javascripts/tt-explorer.js), and for
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
from pathlib import Path
from typing import Any

import numpy as np
import torch

DATA_DIR = "data"
INDEX = "index.json"
IMAGE_FILE = "input.png"

# ----------------------------------------------------------------------------- what is explored


def exploration_names(report_key: str, config: Any) -> list[str]:
    """Record names the explorer needs beyond the pages' own: every layer's attention and output.

    The runners add these to what they keep. (The encoder–decoder's ``weights`` become ``probs``
    when the attention tensors are renamed; the patterns below accept both.)
    """
    names: list[str] = []
    if report_key == "encoder-decoder":
        for i in range(config.n_encoder_layers):
            names += [f"encoder.layers.{i}.self_attn.weights", f"encoder.layers.{i}.output"]
        for i in range(config.n_decoder_layers):
            names += [f"decoder.layers.{i}.self_attn.weights", f"decoder.layers.{i}.cross_attn.weights", f"decoder.layers.{i}.output"]
    elif report_key == "vit":
        for i in range(config.n_layers):
            names += [f"blocks.{i}.attn.probs", f"blocks.{i}.output"]
    return names


# Attention groups: (key, title, unit, pattern with the layer index as group 1, row labels, column labels).
_ATTENTION_GROUPS: dict[str, list[tuple[str, str, str, str, str, str]]] = {
    "encoder-decoder": [
        ("encoder-self", "Encoder self-attention", "layer", r"encoder\.layers\.(\d+)\.self_attn\.(?:weights|probs)", "src_tokens", "src_tokens"),
        ("decoder-self", "Decoder masked self-attention", "layer", r"decoder\.layers\.(\d+)\.self_attn\.(?:weights|probs)", "tgt_tokens", "tgt_tokens"),
        ("cross", "Cross-attention (target queries, source keys)", "layer", r"decoder\.layers\.(\d+)\.cross_attn\.(?:weights|probs)", "tgt_tokens", "src_tokens"),
    ],
    "vit": [
        ("blocks", "Self-attention over [CLS] and the patches", "block", r"blocks\.(\d+)\.attn\.probs", "tokens", "tokens"),
    ],
}

# Axis labels by record name: the first matching pattern wins; keys name lists in index.json "labels".
_AXES: dict[str, list[tuple[str, tuple[str | None, ...]]]] = {
    "encoder-decoder": [
        (r"src_ids", (None, "src_tokens")),
        (r"tgt_ids", (None, "tgt_tokens")),
        (r"src_emb_weight", ("src_words", None)),
        (r"src_embed|src_with_pos|memory", (None, "src_tokens", None)),
        (r"tgt_embed|tgt_with_pos|dec_final", (None, "tgt_tokens", None)),
        (r"tgt_mask", (None, None, "tgt_tokens", "tgt_tokens")),
        (r"logits", (None, "tgt_tokens", "tgt_words")),
        (r"encoder\.layers\.\d+\.self_attn\.(scores|masked_scores|weights|probs)", (None, "heads", "src_tokens", "src_tokens")),
        (r"encoder\.layers\.\d+\.self_attn\.(q_heads|k_heads|v_heads|context)", (None, "heads", "src_tokens", None)),
        (r"encoder\..*", (None, "src_tokens", None)),
        (r"decoder\.layers\.\d+\.self_attn\.(scores|masked_scores|weights|probs)", (None, "heads", "tgt_tokens", "tgt_tokens")),
        (r"decoder\.layers\.\d+\.cross_attn\.(scores|masked_scores|weights|probs)", (None, "heads", "tgt_tokens", "src_tokens")),
        (r"decoder\.layers\.\d+\.cross_attn\.(k_heads|v_heads)", (None, "heads", "src_tokens", None)),
        (r"decoder\.layers\.\d+\.cross_attn\.(k|v)", (None, "src_tokens", None)),
        (r"decoder\.layers\.\d+\.(self_attn|cross_attn)\.(q_heads|k_heads|v_heads|context)", (None, "heads", "tgt_tokens", None)),
        (r"decoder\..*", (None, "tgt_tokens", None)),
    ],
    "vit": [
        (r"image", (None, "channels", None, None)),
        (r"patch_embed\.patches", (None, "patches", "channels", None, None)),
        (r"patch_embed\..*", (None, "patches", None)),
        (r"cls_token", (None, None, None)),
        (r"blocks\.\d+\.attn\.(scores|probs)", (None, "heads", "tokens", "tokens")),
        (r"blocks\.\d+\.attn\.(q|k|v|context)", (None, "heads", "tokens", None)),
        (r"blocks\..*|tokens|tokens_pos|final_seq", (None, "tokens", None)),
        (r"logits|probs", (None, "classes")),
    ],
}


def axis_labels(report_key: str, name: str, shape: tuple[int, ...], labels: dict[str, list[str]]) -> tuple[str | None, ...]:
    """Label key (or None) per axis of ``name``; a key whose list does not fit the axis is dropped."""
    for pattern, keys in _AXES.get(report_key, []):
        if re.fullmatch(pattern, name) and len(keys) == len(shape):
            return tuple(k if k is not None and len(labels.get(k, ())) == n else None for k, n in zip(keys, shape))
    return (None,) * len(shape)


def attention_group_of(report_key: str, name: str) -> tuple[str, int] | None:
    """(group key, 0-based layer) when ``name`` is an attention-probability tensor the explorer shows."""
    for key, _title, _unit, pattern, _rows, _cols in _ATTENTION_GROUPS.get(report_key, []):
        if match := re.fullmatch(pattern, name):
            return key, int(match.group(1))
    return None


def attention_groups(report_key: str, names: list[str], image: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    groups = []
    for key, title, unit, pattern, rows, cols in _ATTENTION_GROUPS.get(report_key, []):
        layers = sorted((int(m.group(1)), n) for n in names if (m := re.fullmatch(pattern, n)))
        if layers:
            groups.append({"key": key, "title": title, "unit": unit, "layers": [n for _, n in layers], "rows": rows, "cols": cols,
                           "image": image})
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
                      axes: dict[str, tuple[str | None, ...]], attention: list[dict], extra: dict | None = None) -> dict:
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
        entries.append({"name": name, "file": file, "shape": list(array.shape), "dtype": array.dtype.str, "labels": keys})
    used = sorted({k for e in entries for k in e["labels"] if k} | {g[k] for g in attention for k in ("rows", "cols")})
    missing = [k for k in used if k not in labels]
    if missing:
        raise ValueError(f"label lists missing: {missing}")
    for group in attention:
        unknown = [n for n in group["layers"] if n not in tensors]
        if unknown:
            raise ValueError(f"attention group {group['key']}: tensors not written: {unknown}")
    index = {"tensors": entries, "labels": {k: [str(v) for v in labels[k]] for k in used}, "attention": attention, **(extra or {})}
    (data / INDEX).write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return index


# ----------------------------------------------------------------------------- from a run


def run_labels(report_key: str, run: Any) -> dict[str, list[str]]:
    dims, labels = run.dims, {}
    if "h" in dims:
        labels["heads"] = [f"head {i + 1}" for i in range(dims["h"])]
    if report_key == "encoder-decoder":
        for key in ("src_tokens", "tgt_tokens", "src_words", "tgt_words"):
            labels[key] = [str(w) for w in run.inputs[key]]
    elif report_key == "vit":
        side = run.dims["H"] // run.dims["P"]
        labels["patches"] = [f"r{r}c{c}" for r in range(side) for c in range(side)]
        labels["tokens"] = ["[CLS]", *labels["patches"]]
        labels["channels"] = ["R", "G", "B"]
        labels["classes"] = [str(c) for c in run.inputs["class_names"]]
    return labels


def image_png(image: torch.Tensor) -> bytes:
    """The preprocessed (normalised) image (1, 3, H, W) as the model saw it, back in 8-bit RGB."""
    from PIL import Image

    from generator.checks import IMAGENET_MEAN, IMAGENET_STD

    mean = torch.tensor(IMAGENET_MEAN).view(3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(3, 1, 1)
    rgb = (image[0].float().cpu() * std + mean).clamp(0, 1).mul(255).round().to(torch.uint8).permute(1, 2, 0).numpy()
    buffer = io.BytesIO()
    Image.fromarray(rgb, mode="RGB").save(buffer, format="PNG", optimize=True)  # no metadata, no timestamp
    return buffer.getvalue()


def write_run_data(report: Any, run: Any, pages: list, out: Path) -> dict:
    """Every tensor the pages show plus each layer's attention and output, for the explorer."""
    key = report.key
    names = sorted({t.name for p in pages for t in p.tensors} | {n for n in exploration_names(key, run.inputs["config"]) if n in run.recording})
    tensors = {n: run.cpu(n) for n in names}
    labels = run_labels(key, run)
    axes = {n: axis_labels(key, n, tuple(t.shape), labels) for n, t in tensors.items()}
    image = None
    if key == "vit" and "image" in run.recording:
        (out / DATA_DIR).mkdir(parents=True, exist_ok=True)
        (out / DATA_DIR / IMAGE_FILE).write_bytes(image_png(run.cpu("image")))
        image = {"file": f"{DATA_DIR}/{IMAGE_FILE}", "grid": run.dims["H"] // run.dims["P"], "cls": True}
    return write_tensor_data(out, tensors, labels=labels, axes=axes, attention=attention_groups(key, names, image),
                             extra={"report": key, "dims": dict(run.dims)})


# ----------------------------------------------------------------------------- for the templates


def explore_info(page: Any) -> dict[str, Any]:
    """What _explore.md.j2 needs for a snapshot page: its tensors' files and its explorer group."""
    depth = page.path.count("/")
    names = list(dict.fromkeys(t.name for t in page.tensors))
    group = attention_group_of(page.report.key, page.main.name)
    return {
        "tensors": names,
        "files": {n: "../" * depth + f"{DATA_DIR}/{n}.npy" for n in names},  # Markdown links: relative to the .md file
        # Raw HTML is not rewritten by MkDocs: relative to the page's URL (directory URLs: one level deeper).
        "index": "../" * (depth + 1) + f"{DATA_DIR}/{INDEX}",
        "group": group[0] if group else None,
        "layer": group[1] if group else None,
    }
