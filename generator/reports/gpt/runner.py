"""Run the GPT on a prompt with recording on: the prompt pass, a greedy generation over a key/value cache,
and a second pass on the prompt with its last byte changed (to show that earlier positions never see it)."""

from __future__ import annotations

import hashlib
import math
import unicodedata
from collections.abc import Callable
from pathlib import Path

import torch

from transformer_trace.catalogue import Report
from transformer_trace.reports.gpt.options import GPTOptions, max_prompt_bytes
from transformer_trace.reports.gpt.training import (
    CHECKPOINT,
    corpus_bytes,
    corpus_facts,
    held_out_bits_later,
    load_record,
    load_state,
    measure_ahead,
    measured_held_out_bits,
    split,
)
from transformer_trace.places import Place
from transformer_trace.run import ModelRun, resolve_device
from transformer_trace.models.gpt import (GPT, LEGEND, CausalSelfAttention, GPTConfig, KVCache, byte_label, decode,
                                          encode)
from transformer_trace.text import clean_text
from transformer_trace.models.recording import Recording, declared_points, recording


EVERY_BLOCK = Place("blocks.{i}.attn", CausalSelfAttention)  # {i}: each block in turn

def weighted_model(opts: GPTOptions) -> tuple[GPT, str, dict]:
    """The run's model with its weights (on the CPU), the run-stamp text and the facts about its weights."""
    cfg = opts.config()
    # Weights are drawn on the CPU so a seed gives the same model on every device.
    torch.manual_seed(opts.seed)
    model = GPT(cfg).eval()
    weights_text, training = load_weights(model, opts)
    return model, weights_text, training


def held_out_window(cfg: GPTConfig) -> int:
    return min(cfg.context, 256)


def start(report: Report, opts: GPTOptions) -> Callable[[], None]:
    """Begin, before the reports run, the held-out score of this run's weights (a thread, with a copy of them): it
    does not
    depend on the prompt, and is the one long step of this run that nothing else waits on until the training page. A
    function that waits for it. Bad options are left to run(), which says what is wrong with them."""
    try:
        device = resolve_device(opts.device)
        with torch.random.fork_rng(devices=[]):  # the other reports' seeded weights are drawn as without this
            model, _, _ = weighted_model(opts)
        _, held_out = split(corpus_bytes())
        return measure_ahead(model.to(device), held_out.to(device), held_out_window(opts.config()))
    except Exception:  # noqa: BLE001 - run() meets the same error and reports it
        return lambda: None


def run(report: Report, opts: GPTOptions) -> ModelRun:
    device = resolve_device(opts.device)
    cfg = opts.config()
    model, weights_text, training = weighted_model(opts)
    model.to(device)
    prompt = opts.prompt
    prompt_ids = encode(prompt)
    ids = torch.tensor([prompt_ids], device=device)  # (1, T)
    places = opts.places()
    keep = report.names_to_record(opts)
    with torch.no_grad(), recording(keep=keep) as rec:
        # its first pass, over the prompt, is the one the pages trace
        new_ids, info = model.generate(ids, opts.generate)
    new = [int(i) for i in new_ids[0].tolist()]
    prefix = prefix_invariance(model, prompt_ids, cfg, device)
    facts, held_out_later = what_training_did(model, rec, prompt_ids, cfg, device)
    training |= facts
    model.cpu()

    T, N = len(prompt_ids), opts.generate
    V, C, L = cfg.vocab_size, cfg.d_model, cfg.n_layers
    n_params = sum(p.numel() for p in model.parameters())  # counts the tied matrix once
    run = ModelRun(
        report=report,
        model=model,
        recording=rec,
        inputs={
            **_prompt_facts(prompt, prompt_ids, N, opts),
            **prefix,
            **_generation_facts(model, rec, info, prompt_ids, new, cfg, n_params),
            "layer": opts.layer,
            "config": cfg,
            "summary": f"{L} pre-norm blocks, {cfg.n_heads} heads, d_model {C}, MLP {cfg.mlp_dim}, byte vocabulary "
                       f"of {V}, learned positions for a {cfg.context}-byte context, tied embedding and output "
                       f"({n_params / 1e6:.2f} M parameters).",
            "facts": [["prompt", prompt], ["bytes", str(T)], ["generated", f"{N} bytes, greedy"],
                      ["seed", str(opts.seed)], ["device", device.type], ["weights", weights_text]],
            "training": training,
            "explore_start": ({"group": "blocks", "layer": training["best_head"][0], "head": training["best_head"][1]}
                              if training["best_head"] else None),
        },
        dims=LEGEND.sizes(B=1, T=T, N=N, S=T + N - 1, C=C, h=cfg.n_heads, M=cfg.mlp_dim, V=V, L=L),
        places=places,
        seed=opts.seed,
        device=device.type,
        weights=weights_text,
    )
    if held_out_later is not None:  # the pages need it, the run did not: waited for when the build writes them
        run.unfinished.append(lambda: training.__setitem__("held_out_bits", held_out_later()))
    return run



def _prompt_facts(prompt: str, prompt_ids: list[int], N: int, opts: GPTOptions) -> dict:
    """What the pages say of the prompt: its bytes and characters."""
    return {
        "prompt": prompt,
        "removed_characters": list(opts.removed),
        "prompt_ids": prompt_ids,
        "prompt_bytes": [byte_label(b) for b in prompt_ids],
        "n_bytes": len(prompt_ids),
        "n_chars": len(prompt),
        "max_prompt_bytes": max_prompt_bytes(N),
        "characters": characters(prompt),
        "multibyte": [c for c in characters(prompt) if len(c[1]) > 1],
    }


def _generation_facts(model: GPT, rec: Recording, info, prompt_ids: list[int], new: list[int], cfg: GPTConfig,
                      n_params: int) -> dict:
    """What the pages say of the generation: the bytes chosen, the key/value cache and its cost, the model's size."""
    T, N = len(prompt_ids), len(new)
    S, V, C, L = T + N - 1, cfg.vocab_size, cfg.d_model, cfg.n_layers
    element = next(model.parameters()).element_size()  # bytes per number the cache holds
    cached_probs = torch.softmax(info.cached_logits[0].double().cpu(), dim=-1)  # (N, V)
    last_probs = rec.tensor("probs")[0, -1].double().cpu()  # (V,): the distribution the first new byte is drawn from
    before = (prompt_ids + new)[T - 1:T - 1 + N]  # the byte fed at each step: what each new byte follows
    return {
        "generated_ids": new,
        "generated_bytes": [byte_label(b) for b in new],
        "generated_text": decode(new),
        "generated_probs": [float(cached_probs[i, b]) for i, b in enumerate(new)],
        "cache_logit_diff": float((info.cached_logits - info.recomputed_logits).abs().max()),
        "repeats": sum(a == b for a, b in zip(new, before)),  # new bytes equal to the byte just read
        "next_entropy": float(-(last_probs * last_probs.clamp_min(1e-300).log2()).sum()),  # bits; 8: uniform
        "next_top": int(last_probs.argmax()),
        "next_top_prob": float(last_probs.max()),
        "positions_cached": T + N - 1,  # positions the model processes with the cache
        "positions_uncached": N * T + N * (N - 1) // 2,  # ... and recomputing every step from scratch
        "repeat_pair": repeat_pair(prompt_ids),
        "cache_bytes": [byte_label(b) for b in prompt_ids + new[:-1]],
        "kv_bytes": 2 * L * S * C * element,  # keys and values, every block
        "kv_bytes_per_position": 2 * L * C * element,
        "n_params": n_params,
        "n_params_untied": n_params + V * C,
        "tied_saved": V * C,
        "uniform": 1 / V,
        "byte_labels": [byte_label(b) for b in range(V)],
    }

def repeat_pair(ids: list[int]) -> list[int] | None:
    """The first two positions holding the same byte, or None."""
    seen: dict[int, int] = {}
    for position, value in enumerate(ids):
        if value in seen:
            return [seen[value], position]
        seen[value] = position
    return None


def characters(text: str) -> list[list]:
    """Each character of ``text`` with its bytes: [character, [byte values], Unicode name]."""
    return [[ch, list(ch.encode("utf-8")), unicodedata.name(ch, f"U+{ord(ch):04X}")] for ch in text]


def prefix_invariance(model: GPT, prompt_ids: list[int], cfg: GPTConfig, device: torch.device) -> dict:
    """Run the prompt, and the prompt with its last byte changed (+1 mod 256), recording everything.

    Returns the largest difference, over every recorded tensor, at the positions before the last
    (None for a one-byte prompt), the tensor where it is largest, and how much the last position's
    logits moved (to show the change did reach somewhere).
    """
    changed = prompt_ids[:-1] + [(prompt_ids[-1] + 1) % 256]
    recordings: list[Recording] = []
    for ids in (prompt_ids, changed):
        with torch.no_grad(), recording() as rec:
            model(torch.tensor([ids], device=device))
        recordings.append(rec)
    T = len(prompt_ids)
    worst, worst_name = 0.0, ""
    plain_pass = {
        name: d.shape for name, d in declared_points(model).items() if not d.point.scope
    }  # generation's are not recorded here
    for name, shape in plain_pass.items():
        a, b = (r.tensor(name).detach().cpu() for r in recordings)
        index = tuple(slice(0, T - 1) if axis == "T" else slice(None) for axis in shape)
        a, b = a[index].double(), b[index].double()
        same_inf = torch.isinf(a) & (a == b)
        diff = (a - b).abs().masked_fill(same_inf, 0.0)
        value = float(diff.max()) if diff.numel() else 0.0
        if value > worst or not worst_name:
            worst, worst_name = value, name
    last = recordings[0].tensor("logits")[0, -1].double().cpu() - recordings[1].tensor("logits")[0, -1].double().cpu()
    return {
        "prefix_change": worst if T > 1 else None,
        "prefix_worst": worst_name,
        "prefix_names": len(plain_pass),
        "changed_ids": [prompt_ids[-1], changed[-1]],
        "changed_bytes": [byte_label(prompt_ids[-1]), byte_label(changed[-1])],
        "last_change": float(last.abs().max()),
    }


# ----------------------------------------------------------------------------- weights and what training did

CONTINUATION = 64  # bytes of the longer greedy continuation the training page shows


def load_weights(model: GPT, opts: GPTOptions) -> tuple[str, dict]:
    """Load ``opts.weights`` into ``model`` (random: keep the seeded initialisation); (run-stamp text, facts for the
    pages)."""
    if opts.weights == "random":
        return f"random (seeded with {opts.seed}; not trained)", {"kind": "random", "record": None, "checkpoint": None}
    path = CHECKPOINT if opts.weights == "trained" else Path(opts.weights).expanduser()
    state = load_state(path, model.cfg)
    model.load_state_dict(state)
    sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    record = load_record(path)
    kind = "trained" if opts.weights == "trained" else "file"
    # a file name is user text
    name = "the bundled checkpoint gpt-trained.pt" if kind == "trained" else clean_text(path.name)
    if record:
        text = (f"trained: {name}, {record['training']['steps']:,} steps on {record['corpus']['name']} "
                f"(sha256 {sha256[:12]}…)")
    else:
        text = f"loaded from {name} (sha256 {sha256[:12]}…; no training record beside it)"
    return text, {"kind": kind, "record": record, "checkpoint": {"name": name, "sha256": sha256}}


def head_statistics(probs: torch.Tensor) -> list[dict]:
    """Per head of one block's causal attention (B, h, T, T), over the query rows t >= 1 (row 0 can only read itself):
    the mean weight on the previous byte, on the same position, and the mean row entropy in bits."""
    p = probs[0].double().cpu()  # (h, T, T)
    T = p.size(-1)
    rows = torch.arange(1, T)
    previous = p[:, rows, rows - 1]  # (h, T - 1)
    same = p[:, rows, rows]  # (h, T - 1)
    entropy = -(p[:, 1:] * p[:, 1:].clamp_min(1e-300).log2()).sum(-1)  # (h, T - 1)
    return [{"previous": float(previous[h].mean()), "same": float(same[h].mean()), "entropy": float(entropy[h].mean())}
            for h in range(p.size(0))]


def what_training_did(model: GPT, rec: Recording, prompt_ids: list[int], cfg: GPTConfig,
                      device: torch.device) -> tuple[dict, Callable[[], float] | None]:
    """Measured on this run: held-out bits per byte of these weights, the corpus baselines, every head's habits, a
    longer continuation. The held-out score is None, and the function that waits for it is returned, while a thread
    begun ahead (start) still measures it; else that function is None."""
    T = len(prompt_ids)
    names = [EVERY_BLOCK.PROBS.name({"i": str(i)}) for i in range(cfg.n_layers)]
    heads = [head_statistics(rec.tensor(name)) for name in names] if T > 1 else []
    best = max(
        ((i, h) for i in range(len(heads)) for h in range(cfg.n_heads)),
        key=lambda ih: heads[ih[0]][ih[1]]["previous"],
        default=None,
    )
    uniform_entropy = sum(math.log2(t + 1) for t in range(1, T)) / (T - 1) if T > 1 else 0.0
    _, held_out = split(corpus_bytes())
    context = held_out_window(cfg)
    with torch.no_grad():
        later = held_out_bits_later(model, held_out.to(device), context)
        bits = measured_held_out_bits(model, held_out.to(device), context) if later is None else None
        n_new = min(CONTINUATION, cfg.context - T + 1)
        more = greedy_continuation(model, torch.tensor([prompt_ids], device=device), n_new)
        sample = held_out_sample(held_out)
        sample_new = greedy_continuation(model, torch.tensor([sample["prompt"]], device=device), len(sample["truth"]))
    model.eval()
    return {
        "corpus": corpus_facts(),
        "held_out_bits": bits,
        "held_out_context": context,
        "heads": heads,
        "best_head": list(best) if best else None,  # [block, head], 0-based
        "uniform_row_entropy": uniform_entropy,
        "uniform_share": sum(1 / (t + 1) for t in range(1, T)) / (T - 1) if T > 1 else 0.0,
        "continuation": decode([int(b) for b in more]),
        "continuation_bytes": len(more),
        "sample_prompt": decode(sample["prompt"]),
        "sample_truth": decode(sample["truth"]),
        "sample_continuation": decode([int(b) for b in sample_new]),
        "sample_agree": sum(int(a) == b for a, b in zip(sample_new, sample["truth"])),
        "sample_bytes": len(sample["truth"]),
        "sample_offset": sample["offset"],
    }, later


def greedy_continuation(model: GPT, ids: torch.Tensor, n_new: int) -> list[int]:
    """The ``n_new`` bytes ``model.generate`` appends to ``ids`` (1, T), by the same passes over a key/value cache,
    without the whole-sequence pass it adds at every step for the generation check (its cost grows with the square of
    the length, and only the bytes are shown here)."""
    if n_new < 1:
        return []
    cache, new = KVCache(), list[torch.Tensor]()  # new: each step's chosen byte (1, 1)
    logits = model(ids, cache)[:, -1]  # (1, V)
    for step in range(n_new):
        if step:
            logits = model(new[-1], cache)[:, -1]  # (1, 1) -> (1, V)
        new.append(logits.argmax(dim=-1, keepdim=True))  # (1, 1)
    return [int(byte) for byte in torch.cat(new, dim=1)[0].tolist()]


def held_out_sample(held_out: torch.Tensor, prompt: int = 48, truth: int = 48) -> dict:
    """A fixed held-out passage: the first ``prompt`` bytes of the first line of prose (a letter first, at least
    ``prompt``
    + 16 bytes long) after the split, and the ``truth`` bytes that follow them in the corpus."""
    data = bytes(held_out.tolist())
    start = 0
    for line in data.split(b"\n"):
        text = line.lstrip(b" ")
        if len(text) >= prompt + 16 and text[:1].isalpha():
            start += len(line) - len(text)
            break
        start += len(line) + 1
    else:
        start = 0
    return {
        "offset": start,
        "prompt": list(data[start : start + prompt]),
        "truth": list(data[start + prompt : start + prompt + truth]),
    }
