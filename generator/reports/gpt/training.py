"""Train the report's byte GPT on the bundled corpus, reproducibly, on the CPU: `python -m transformer_trace train gpt`.

The corpus is CPython 3.11.7's ``pydoc_data.topics`` (the help texts of ``help("topics")``), every topic in
sorted order, joined by blank lines, stored gzipped in assets/ (PSF licence, see assets/README.md). Its first
90% of bytes train, the last 10% are held out. One seed fixes the initial weights and the batches; the
thread count is pinned (a CPU matrix product sums in an order that depends on it), and deterministic
algorithms are asked for, so the same seed gives the same loss curve, step by step, on the same machine.

The record written beside the checkpoint (same name, .json) holds everything the report states about
training: corpus sha256, steps, batch, context, the learning-rate schedule, the loss curve, held-out bits
per byte (model, uniform, bigram baseline), versions and seconds.
"""

from __future__ import annotations

import gzip
import hashlib
import inspect
import json
import logging
import math
import os
import platform
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import torch
import torch.nn.functional as F

from transformer_trace.errors import UserError
from transformer_trace.state_dicts import refuse_unusable_values
from transformer_trace.models.gpt import GPT, GPTConfig

ASSETS = Path(__file__).resolve().parent / "assets"
PROJECT = Path(__file__).resolve().parents[3]
log = logging.getLogger("transformer_trace")
CORPUS = ASSETS / "corpus.txt.gz"
CHECKPOINT = ASSETS / "gpt-trained.pt"
HELD_OUT_FRACTION = 0.1


def record_path(checkpoint: Path) -> Path:
    return checkpoint.with_suffix(".json")


@dataclass(frozen=True)
class TrainingConfig:
    steps: int = 1000
    batch: int = 16  # sequences per step
    context: int = 256  # bytes per sequence: every position of the model's table is trained
    lr: float = 3e-3  # peak learning rate (AdamW)
    warmup: int = 50  # linear warm-up steps, independent of `steps` so a short run follows the same first steps
    final_lr_fraction: float = 0.1  # cosine decay from lr to lr * this at the last step
    weight_decay: float = 0.1  # on matrices only, not on biases, LayerNorms or position rows
    betas: tuple[float, float] = (0.9, 0.95)
    grad_clip: float = 1.0
    seed: int = 0
    threads: int = 2
    eval_every: int = 100  # held-out loss every this many steps and at the last (0: never, for short reproductions)

    def learning_rate(self, step: int) -> float:
        """Linear warm-up over ``warmup`` steps, then cosine decay to ``final_lr_fraction`` of the peak by the end."""
        if step < self.warmup:
            return self.lr * (step + 1) / self.warmup
        span = max(1, self.steps - 1 - self.warmup)
        progress = min(1.0, (step - self.warmup) / span)
        low = self.lr * self.final_lr_fraction
        return low + 0.5 * (self.lr - low) * (1 + math.cos(math.pi * progress))


# ----------------------------------------------------------------------------- corpus


@lru_cache(maxsize=1)
def corpus_bytes() -> bytes:
    return gzip.decompress(CORPUS.read_bytes())


def split(data: bytes) -> tuple[torch.Tensor, torch.Tensor]:
    """(train, held_out) byte tensors: the first 90% and the last 10%, a fixed split."""
    cut = int(len(data) * (1 - HELD_OUT_FRACTION))
    ids = torch.frombuffer(bytearray(data), dtype=torch.uint8).long()
    return ids[:cut], ids[cut:]


def bigram_bits_per_byte(train: torch.Tensor, held_out: torch.Tensor) -> float:
    """Held-out bits per byte of the bigram model P(b | a) counted on the training bytes, add-one smoothed."""
    counts = torch.ones(256, 256, dtype=torch.float64)  # add-one: an unseen pair keeps a little probability
    counts.index_put_((train[:-1], train[1:]), torch.ones(len(train) - 1, dtype=torch.float64), accumulate=True)
    log_p = (counts / counts.sum(1, keepdim=True)).log2()
    return float(-log_p[held_out[:-1], held_out[1:]].mean())


def corpus_facts() -> dict:
    data = corpus_bytes()
    train, held_out = split(data)
    return {
        "name": "CPython 3.11.7 pydoc_data.topics (PSF licence)",
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "train_bytes": len(train),
        "held_out_bytes": len(held_out),
        "distinct_bytes": len(set(data)),
        "bigram_bits_per_byte": bigram_bits_per_byte(train, held_out),
        "unigram_bits_per_byte": _unigram_bits(train, held_out),
    }


def _unigram_bits(train: torch.Tensor, held_out: torch.Tensor) -> float:
    counts = torch.bincount(train, minlength=256).double() + 1
    return float(-(counts / counts.sum()).log2()[held_out].mean())


# ----------------------------------------------------------------------------- training


@torch.no_grad()
def held_out_bits_per_byte(model: GPT, held_out: torch.Tensor, context: int) -> float:
    """Mean next-byte cross-entropy over the held-out bytes, in bits, in consecutive windows of ``context`` bytes."""
    model.eval()
    n = (len(held_out) - 1) // context * context
    x = held_out[:n].view(-1, context)  # (windows, context)
    y = held_out[1:n + 1].view(-1, context)
    total = 0.0
    for start in range(0, len(x), 64):
        logits = model(x[start:start + 64])  # (b, context, V)
        total += float(F.cross_entropy(logits.reshape(-1, logits.size(-1)), y[start:start + 64].reshape(-1),
                                       reduction="sum"))
    model.train()
    return total / n / math.log(2)


def cache_dir() -> Path:
    """Where measurements that depend only on their inputs are kept between runs (generator/template_cache.py: never the
    installation folder)."""
    from transformer_trace.template_cache import cache_root

    return cache_root()


def _evaluation_key(model: GPT, held_out: torch.Tensor, context: int) -> str:
    """Everything the held-out score is a function of: the weights (every tensor's bytes), the held-out bytes, the
    window, the device, PyTorch's version and thread count (a CPU sum's order) and the code that computes it."""
    digest = hashlib.sha256(b"held-out bits per byte, v1\0")
    device = next(model.parameters()).device
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else device.type  # another GPU sums otherwise
    digest.update(f"{torch.__version__} {where} {torch.get_num_threads()} {context}\0".encode())
    for source in (Path(__file__), Path(inspect.getfile(GPT))):
        digest.update(source.read_bytes())
    digest.update(held_out.cpu().numpy().tobytes())
    for name, tensor in sorted(model.state_dict().items()):
        tensor = tensor.detach().cpu().contiguous()
        digest.update(f"{name} {tensor.dtype} {tuple(tensor.shape)}\0".encode()
                      + tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def _cached_bits(path: Path) -> float | None:
    try:
        bits = json.loads(path.read_text(encoding="utf-8"))["bits"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return bits if isinstance(bits, float) and math.isfinite(bits) else None


def _remember_bits(path: Path, bits: float) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
        partial.write_text(json.dumps({"bits": bits}) + "\n", encoding="utf-8")
        os.replace(partial, path)  # whole or absent, whoever else writes the same entry
    except OSError:
        pass


class _Ahead:
    """A held-out score being measured in a thread (measure_ahead), for the run that asks for it."""

    def __init__(self, model: GPT, held_out: torch.Tensor, context: int, path: Path) -> None:
        self.bits: float | None = None
        self.seconds = 0.0
        self.measured = (model, held_out, context)  # should the thread fail, what to measure in place
        self.thread = threading.Thread(target=self._measure, args=(model, held_out, context, path), name="tt-held-out")
        self.thread.start()

    def _measure(self, model: GPT, held_out: torch.Tensor, context: int, path: Path) -> None:
        started = time.perf_counter()
        # the lowest priority (this thread, and the OpenMP threads it starts): the runs go first, it takes idle cores
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except (AttributeError, OSError):
            pass
        try:
            bits = held_out_bits_per_byte(model, held_out, context)
        except Exception:  # noqa: BLE001 - the run measures it itself, and meets the error there
            return
        self.seconds = time.perf_counter() - started
        self.bits = bits
        _remember_bits(path, bits)


_AHEAD: dict[Path, _Ahead] = {}  # cache entry -> its score being measured ahead


def measure_ahead(model: GPT, held_out: torch.Tensor, context: int) -> Callable[[], None]:
    """Begin measured_held_out_bits(model, held_out, context) in a thread, unless it is remembered: a run of the same
    weights then takes its result (the other reports' forward passes and PyTorch's single-threaded work leave a core to
    it). ``model`` is the thread's alone (a copy of the run's weights), and it runs under this process's thread count:
    the very float a measurement in place gives (the cache's key says so). A function that waits for the thread (call it
    before forking)."""
    path = cache_dir() / "held-out" / f"{_evaluation_key(model, held_out, context)}.json"
    if path in _AHEAD or _cached_bits(path) is not None:
        return lambda: None
    ahead = _AHEAD[path] = _Ahead(model, held_out, context, path)
    return ahead.thread.join


def held_out_bits_later(model: GPT, held_out: torch.Tensor, context: int) -> Callable[[], float] | None:
    """When the score of these weights is being measured ahead (measure_ahead), a function that waits for it (the run
    need not: its pages do); None otherwise."""
    path = cache_dir() / "held-out" / f"{_evaluation_key(model, held_out, context)}.json"
    ahead = _AHEAD.get(path)
    if ahead is None:
        return None

    def wait() -> float:
        return measured_held_out_bits(*ahead.measured)  # the thread's result (its copy of the weights is the key's too)

    return wait


def measured_held_out_bits(model: GPT, held_out: torch.Tensor, context: int) -> float:
    """held_out_bits_per_byte(model, held_out, context), remembered per weights: the score is a property of the weights
    (not of the prompt), and the same weights, bytes, window, device and threads give the same float. A report of
    weights scored before reads it back (about half a second saved on 2 cores); an unreadable or unwritable cache only
    means measuring. A score begun by measure_ahead is waited for and taken."""
    started = time.perf_counter()
    path = cache_dir() / "held-out" / f"{_evaluation_key(model, held_out, context)}.json"
    ahead = _AHEAD.pop(path, None)
    if ahead is not None:
        ahead.thread.join()
        if ahead.bits is not None:
            log.info("gpt: held-out score measured ahead (%.2f s in a thread, beside the other work), waited for in "
                     "%.2f s",
                     ahead.seconds, time.perf_counter() - started)
            return ahead.bits
    bits = _cached_bits(path)
    if bits is not None:
        log.info("gpt: held-out score read back (measured before for these weights) in %.2f s",
                 time.perf_counter() - started)
        return bits
    bits = held_out_bits_per_byte(model, held_out, context)
    model.eval()
    log.info("gpt: held-out score measured in %.2f s", time.perf_counter() - started)
    _remember_bits(path, bits)
    return bits


def _optimizer(model: GPT, cfg: TrainingConfig) -> torch.optim.Optimizer:
    params = dict(model.named_parameters())  # the tied matrix appears once
    decay = [p for name, p in params.items() if p.dim() == 2 and name != "pos_emb.weight"]
    rest = [p for name, p in params.items() if not (p.dim() == 2 and name != "pos_emb.weight")]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": rest, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas, foreach=False)


def train(cfg: TrainingConfig, model_cfg: GPTConfig | None = None,
          progress: Callable[[int, float], None] | None = None) -> tuple[GPT, dict]:
    """Train a GPT from seed ``cfg.seed``; returns the model and the training record (without the checkpoint's hash)."""
    model_cfg = model_cfg or GPTConfig()
    if cfg.context > model_cfg.context:
        raise UserError(f"--context {cfg.context} is longer than the model's {model_cfg.context}-position table")
    started, cpu_started = time.perf_counter(), time.process_time()
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(cfg.threads)
    torch.use_deterministic_algorithms(True)
    try:
        data = corpus_bytes()
        train_ids, held_out = split(data)
        torch.manual_seed(cfg.seed)
        model = GPT(model_cfg).train()
        batches = torch.Generator().manual_seed(cfg.seed)
        optimizer = _optimizer(model, cfg)
        losses: list[float] = []
        evaluations: list[list[float]] = []
        for step in range(cfg.steps):
            for group in optimizer.param_groups:
                group["lr"] = cfg.learning_rate(step)
            starts = torch.randint(0, len(train_ids) - cfg.context - 1, (cfg.batch,), generator=batches)
            window = torch.stack([train_ids[s:s + cfg.context + 1] for s in starts.tolist()])  # (batch, context + 1)
            logits = model(window[:, :-1])  # (batch, context, V)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), window[:, 1:].reshape(-1))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            optimizer.step()
            losses.append(float(loss.detach()))
            if cfg.eval_every and ((step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps):
                evaluations.append([step + 1, held_out_bits_per_byte(model, held_out, cfg.context)])
            if progress:
                progress(step, losses[-1])
        model.eval()
        seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)
    record = {
        "corpus": corpus_facts(),
        "training": asdict(cfg),
        "model": asdict(model_cfg),
        "n_params": sum(p.numel() for p in model.parameters()),
        "lr_schedule": schedule_text(cfg),
        "loss_curve": losses,  # mean cross-entropy of each step's batch, in nats
        "held_out_curve": evaluations,  # [step, held-out bits per byte]
        "held_out_bits_per_byte": evaluations[-1][1] if evaluations else None,
        "uniform_bits_per_byte": 8.0,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "seconds": seconds,  # wall-clock, training and held-out evaluations
        "cpu_seconds": cpu_seconds,  # CPU time of all threads: what the run cost, however busy the machine was
    }
    return model, record


def schedule_text(cfg: TrainingConfig) -> str:
    """The learning-rate schedule as it ran (a run no longer than the warm-up never reaches the peak nor decays)."""
    if cfg.steps <= cfg.warmup:
        return (f"linear warm-up towards {cfg.lr:g} over {cfg.warmup} steps, stopped after {cfg.steps} "
                f"(learning rate {cfg.learning_rate(cfg.steps - 1):g} at the last step; no decay)")
    return (f"linear warm-up to {cfg.lr:g} over {cfg.warmup} steps, "
            f"then cosine decay to {cfg.lr * cfg.final_lr_fraction:g} at step {cfg.steps}")


def save(model: GPT, record: dict, out: Path) -> dict:
    """Write the state dict to ``out`` and the record, with the checkpoint's sha256, to ``out`` with .json: both to
    temporary files first, then renamed, so a failure on the way leaves the old checkpoint and record as they were."""
    out.parent.mkdir(parents=True, exist_ok=True)
    checkpoint_part, record_part = (p.with_name(f".{p.name}.{os.getpid()}.partial") for p in (out, record_path(out)))
    try:
        torch.save(model.state_dict(), checkpoint_part)
        digest = hashlib.sha256(checkpoint_part.read_bytes()).hexdigest()
        record = {**record, "checkpoint": out.name, "checkpoint_sha256": digest}
        record_part.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        os.replace(checkpoint_part, out)
        os.replace(record_part, record_path(out))
    except OSError as exc:
        raise UserError(f"--out {out}: cannot write the checkpoint and its record ({exc.strerror or exc}); "
                        "what was there is unchanged") from None
    finally:
        for part in (checkpoint_part, record_part):
            if part.is_file():
                part.unlink()
    return record


# ----------------------------------------------------------------------------- loading


def load_record(checkpoint: Path) -> dict | None:
    path = record_path(checkpoint)
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if _has_record_shape(record) else None  # a file of another kind beside the checkpoint: no record


RECORD_KEYS = {"corpus": ("name", "sha256"),
               "training": ("steps", "batch", "context", "seed", "threads", "weight_decay", "grad_clip"),
               "loss_curve": (), "held_out_curve": (), "held_out_bits_per_byte": (), "lr_schedule": (), "seconds": (),
               "torch": ()}


def _has_record_shape(record: object) -> bool:
    """Whether ``record`` has what the pages read of a training record (written by `train`)."""
    if not isinstance(record, dict) or any(key not in record for key in RECORD_KEYS):
        return False
    if not all(isinstance(record[key], dict) and all(k in record[key] for k in inner) for key,
               inner in RECORD_KEYS.items() if inner):
        return False
    curve = record["loss_curve"]
    return isinstance(curve, list) and bool(curve) and all(isinstance(v, (int, float)) for v in curve)


def load_state(path: Path, cfg: GPTConfig) -> dict[str, torch.Tensor]:
    """The state dict at ``path``, checked key by key and shape by shape against a GPT of ``cfg``, else a UserError."""
    if not path.is_file():
        raise UserError(f"--weights {str(path)!r} is neither trained, random nor a file; give a GPT state dict saved "
                        f"by `python -m transformer_trace train gpt`")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the user's to fix, in one line
        raise UserError(f"{path} is not a PyTorch state dict torch.load can read ({type(exc).__name__}); "
                        "save one with `python -m transformer_trace train gpt --out PATH`") from None
    if not isinstance(state, dict):
        raise UserError(f"{path} holds a {type(state).__name__}, not a state dict (a mapping of parameter names to "
                        f"tensors)")
    expected = GPT(cfg).state_dict()
    for key, tensor in expected.items():
        if key not in state:
            raise UserError(f"{path} does not fit this GPT (--layers {cfg.n_layers}, --d-model {cfg.d_model}): key "
                            f"{key!r} is missing")
        got = state[key]
        if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(tensor.shape):
            shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
            raise UserError(f"{path} does not fit this GPT (--layers {cfg.n_layers}, --d-model {cfg.d_model}, --heads "
                            f"{cfg.n_heads}): key {key!r} has shape {shape}, expected {tuple(tensor.shape)}")
    extra = sorted(set(state) - set(expected))
    if extra:
        raise UserError(f"{path} does not fit this GPT: unexpected key {extra[0]!r}"
                        + (f" and {len(extra) - 1} more" if len(extra) > 1 else ""))
    refuse_unusable_values(path, state, expected, "GPT")
    return state


# ----------------------------------------------------------------------------- command line


def main(steps: int | None, out: Path | None, seed: int | None = None, quiet: bool = False) -> dict:
    defaults = TrainingConfig()
    cfg = TrainingConfig(steps=steps or defaults.steps, seed=defaults.seed if seed is None else seed)
    out = out or CHECKPOINT
    if out.exists() and out.is_dir():
        raise UserError(f"--out {out} is a folder; give the checkpoint's file name, e.g. {out / 'gpt-trained.pt'}")
    if record_path(out) == out:
        raise UserError(f"--out {out} would be overwritten by its own training record (.json); give the checkpoint "
                        f"another name, e.g. {out.with_suffix('.pt')}")
    try:  # before training, not after minutes of it
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--out {out}: cannot create its folder ({exc.strerror or type(exc).__name__})") from None
    if not os.access(out.parent, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise UserError(f"--out {out}: cannot write there")
    if record_path(out).exists() and load_record(out) is None:  # the record would replace a file of the user's
        raise UserError(f"--out {out}: {record_path(out)} is there and is not a training record; move it away or give "
                        "the checkpoint another name")
    last = [time.perf_counter()]

    def report(step: int, loss: float) -> None:
        if (step + 1) % 50 == 0 or step + 1 == cfg.steps:
            now = time.perf_counter()
            print(f"step {step + 1}/{cfg.steps}  loss {loss:.4f}  ({now - last[0]:.1f} s)", flush=True)
            last[0] = now

    model, record = train(cfg, progress=None if quiet else report)
    record = save(model, record, out)
    if not quiet:
        print(f"wrote {out} and {record_path(out).name}: held-out {record['held_out_bits_per_byte']:.3f} bits per byte "
              f"(bigram {record['corpus']['bigram_bits_per_byte']:.3f}, uniform 8) in {record['seconds']:.0f} s")
    return record
