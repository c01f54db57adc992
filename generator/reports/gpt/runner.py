"""Run the GPT on a prompt with recording on: the prompt pass, a greedy generation over a key/value cache,
and a second pass on the prompt with its last byte changed (to show that earlier positions never see it)."""

from __future__ import annotations

import unicodedata

import torch

from generator.catalogue import Report
from generator.reports.gpt.options import GPTOptions, max_prompt_bytes
from generator.run import ModelRun, resolve_device
from models.gpt import GPT, GPTConfig, byte_label, decode, encode, record_points
from models.recording import Recording, recording


def run(report: Report, opts: GPTOptions) -> ModelRun:
    device = resolve_device(opts.device)
    cfg = opts.config()
    # Weights are drawn on the CPU so a seed gives the same model on every device.
    torch.manual_seed(opts.seed)
    model = GPT(cfg).eval()
    model.to(device)
    prompt = opts.prompt
    prompt_ids = encode(prompt)
    ids = torch.tensor([prompt_ids], device=device)  # (1, T)
    places = opts.places()
    keep = report.names_to_record(opts)
    with torch.no_grad(), recording(keep=keep) as rec:
        new_ids, info = model.generate(ids, opts.generate)  # its first pass, over the prompt, is the one the pages trace
    new = [int(i) for i in new_ids[0].tolist()]
    prefix = prefix_invariance(model, prompt_ids, cfg, device)
    model.cpu()

    T, N = len(prompt_ids), opts.generate
    S = T + N - 1
    V, C, L = cfg.vocab_size, cfg.d_model, cfg.n_layers
    n_params = sum(p.numel() for p in model.parameters())  # counts the tied matrix once
    element = next(model.parameters()).element_size()  # bytes per number the cache holds
    cached_probs = torch.softmax(info.cached_logits[0].double().cpu(), dim=-1)  # (N, V)
    chosen_probs = [float(cached_probs[i, b]) for i, b in enumerate(new)]
    cache_diff = float((info.cached_logits - info.recomputed_logits).abs().max())
    fed = prompt_ids + new[:-1]
    last_probs = rec.tensor("probs")[0, -1].double().cpu()  # (V,): the distribution the first new byte is drawn from
    entropy = float(-(last_probs * last_probs.clamp_min(1e-300).log2()).sum())
    before = (prompt_ids + new)[T - 1:T - 1 + N]  # the byte fed at each step: what each new byte follows
    return ModelRun(
        report=report.key,
        model=model,
        recording=rec,
        inputs={
            "prompt": prompt,
            "removed_characters": list(opts.removed),
            "prompt_ids": prompt_ids,
            "prompt_bytes": [byte_label(b) for b in prompt_ids],
            "n_bytes": T,
            "n_chars": len(prompt),
            "max_prompt_bytes": max_prompt_bytes(N),
            "characters": characters(prompt),
            "multibyte": [c for c in characters(prompt) if len(c[1]) > 1],
            **prefix,
            "generated_ids": new,
            "generated_bytes": [byte_label(b) for b in new],
            "generated_text": decode(new),
            "generated_probs": chosen_probs,
            "cache_logit_diff": cache_diff,
            "repeats": sum(a == b for a, b in zip(new, before)),  # new bytes equal to the byte just read
            "next_entropy": entropy,  # bits; 8 for a uniform choice among 256 bytes
            "next_top": int(last_probs.argmax()),
            "next_top_prob": float(last_probs.max()),
            "positions_cached": T + N - 1,  # positions the model processes with the cache
            "positions_uncached": N * T + N * (N - 1) // 2,  # ... and recomputing every step from scratch
            "repeat_pair": repeat_pair(prompt_ids),
            "cache_bytes": [byte_label(b) for b in fed],
            "kv_bytes": 2 * L * S * C * element,  # keys and values, every block
            "kv_bytes_per_position": 2 * L * C * element,
            "n_params": n_params,
            "n_params_untied": n_params + V * C,
            "tied_saved": V * C,
            "uniform": 1 / V,
            "byte_labels": [byte_label(b) for b in range(V)],
            "layer": opts.layer,
            "config": cfg,
            "summary": f"{L} pre-norm blocks, {cfg.n_heads} heads, d_model {C}, MLP {cfg.mlp_dim}, byte vocabulary of {V}, "
                       f"learned positions for a {cfg.context}-byte context, tied embedding and output ({n_params / 1e6:.2f} M parameters).",
            "facts": [["prompt", prompt], ["bytes", str(T)], ["generated", f"{N} bytes, greedy"], ["seed", str(opts.seed)],
                      ["device", device.type], ["weights", "random (seeded)"]],
        },
        dims={"B": 1, "T": T, "N": N, "S": S, "C": C, "h": cfg.n_heads, "hs": cfg.head_size, "M": cfg.mlp_dim, "V": V, "L": L},
        places=places,
        seed=opts.seed,
        device=device.type,
    )


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
    for name, shape in record_points(cfg).items():
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
        "prefix_names": len(record_points(cfg)),
        "changed_ids": [prompt_ids[-1], changed[-1]],
        "changed_bytes": [byte_label(prompt_ids[-1]), byte_label(changed[-1])],
        "last_change": float(last.abs().max()),
    }
