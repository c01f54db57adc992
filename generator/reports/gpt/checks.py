"""Checks specific to the GPT report; they register with the generic ones in generator.checks.

Each recomputes its claim in float64: from other captured tensors, from the model's parameters,
or (for the key/value cache and generation) by re-running a float64 copy of the model on the
whole sequence without a cache.
"""

from __future__ import annotations

import copy
import weakref

import torch
import torch.nn.functional as F

from generator.checks import TOLERANCE, TensorName, check, close
from generator.run import ModelRun
from generator.tensors import fmt
from models.gpt import decode, encode
from models.recording import recording

PREFIX_TOLERANCE = 1e-6  # earlier positions must not move when the last byte changes


@check
def prompt_bytes(run: ModelRun, out: TensorName, prompt: str) -> tuple[str, bool, str]:
    """``prompt`` names the run input holding the prompt text."""
    text = run.inputs[prompt]
    got = [int(i) for i in run.t(out).flatten().tolist()]
    expected = encode(text)
    passed = got == expected and all(0 <= i < 256 for i in got) and decode(got) == text
    n_chars = len(text)
    return "the IDs are the prompt's UTF-8 bytes", passed, (
        f"{len(got)} IDs, each a byte value 0–255, equal the UTF-8 encoding of the {n_chars}-character prompt and decode back to it"
        if passed else f"IDs {got[:12]}… differ from the UTF-8 bytes {expected[:12]}…"
    )


@check
def embedding_rows(run: ModelRun, out: TensorName, ids: TensorName, parameter: str) -> tuple[str, bool, str]:
    table = run.parameter(parameter)  # (V, C)
    passed, detail = close(run.t(out), table[run.t(ids).long()], f"each position vs row ID of {parameter}")
    return f"each position is its byte's row of {parameter}", passed, detail


@check
def position_rows(run: ModelRun, out: TensorName, parameter: str) -> tuple[str, bool, str]:
    got = run.t(out)  # (T, C)
    table = run.parameter(parameter)  # (context, C)
    passed, detail = close(got, table[: got.shape[0]], f"row t vs row t of {parameter}, t = 0…{got.shape[0] - 1}")
    return f"rows 0…T−1 of {parameter}", passed, detail + f"; {table.shape[0] - got.shape[0]} of its {table.shape[0]} rows are unused by this prompt"


def _lower_triangle(T: int, S: int | None = None) -> torch.Tensor:
    S = T if S is None else S
    return torch.arange(S)[None, :] <= torch.arange(S - T, S)[:, None]  # (T, S): key s allowed for query t


@check
def causal_mask_bool(run: ModelRun, masked: TensorName, scores: TensorName, mask: TensorName) -> tuple[str, bool, str]:
    allowed = run.cpu(mask).bool()  # (1, 1, T, T)
    T = allowed.shape[-1]
    expected = _lower_triangle(T).view(1, 1, T, T)
    structure = torch.equal(allowed, expected)
    applied, detail = close(run.t(masked), run.t(scores).masked_fill(~allowed, float("-inf")), "masked scores vs scores with −inf where the mask is False")
    change = run.inputs.get("prefix_change")
    invariant = change is None or change <= PREFIX_TOLERANCE
    text = (f"{int(expected.sum())} allowed (on or below the diagonal) and {int((~expected).sum())} blocked entries, as expected: {structure}; "
            + detail)
    if change is None:
        text += "; with a one-byte prompt there is no earlier position to compare"
    else:
        text += (f"; a second pass with the last byte changed (0x{run.inputs['changed_ids'][0]:02X} → 0x{run.inputs['changed_ids'][1]:02X}) moved "
                 f"every tensor at the {T - 1} earlier positions by at most {run.inputs['prefix_change']:.1e} (tolerance {PREFIX_TOLERANCE:.0e})")
    return "True exactly on and below the diagonal; later bytes cannot reach earlier positions", structure and applied and invariant, text


@check
def masked_fill_of(run: ModelRun, out: TensorName, scores: TensorName, mask: TensorName) -> tuple[str, bool, str]:
    allowed = run.cpu(mask).bool()
    got = run.t(out)
    passed, detail = close(got, run.t(scores).masked_fill(~allowed, float("-inf")), "recomputed scores.masked_fill(~mask, −inf)")
    blocked = torch.isneginf(got)
    exact = torch.equal(blocked, (~allowed).expand_as(got))
    return "the scores where the mask allows, −inf where it blocks", passed and exact, (
        f"{int(blocked.sum()):,} entries are −inf, exactly the blocked ones: {exact}; " + detail
    )


@check
def gpt_block_rerun(run: ModelRun, out: TensorName, x: TensorName, block: str, mask: TensorName) -> tuple[str, bool, str]:
    module = copy.deepcopy(run.module(block)).double().cpu()
    with torch.no_grad():
        expected, _ = module(run.t(x), run.cpu(mask).bool())
    passed, detail = close(run.t(out), expected, "the block re-run in float64 on its recorded input")
    return "equals the block applied to its input", passed, detail


@check
def tied_head(run: ModelRun, out: TensorName, x: TensorName, head: str, embedding: str) -> tuple[str, bool, str]:
    head_weight, emb_weight = run.module(head).weight, run.module(embedding).weight
    tied = head_weight is emb_weight
    expected = run.t(x) @ emb_weight.detach().double().cpu().T  # (B, T, C) @ (C, V) -> (B, T, V)
    passed, detail = close(run.t(out), expected, f"recomputed ln_f · {embedding}.weightᵀ")
    V, C = emb_weight.shape
    return "equals ln_f times the token-embedding table (weight tying)", passed and tied, (
        f"{head}.weight is {embedding}.weight, one ({V}, {C}) parameter: {tied}; " + detail
    )


@check
def next_byte(run: ModelRun, out: TensorName, logits: TensorName, new_ids: TensorName) -> tuple[str, bool, str]:
    probs = run.t(out)[0, -1]  # (V,)
    expected = torch.softmax(run.t(logits)[0, -1], dim=-1)
    passed, detail = close(probs, expected, "recomputed softmax of the last position's logits")
    total = float(probs.sum())
    top = int(probs.argmax())
    first = int(run.t(new_ids)[0, 0])
    passed &= abs(total - 1) <= TOLERANCE and top == first
    return "sums to 1; its most probable byte is the first generated byte", passed, (
        f"sum = {total:.6f}; the largest probability, {fmt(float(probs[top]))}, is on byte {top}, and generation chose byte {first}; " + detail
    )


# ----------------------------------------------------------------------------- generation

_FULL_PASSES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> {ids: recording of a float64 pass}


def full_pass(run: ModelRun, ids: list[int]):
    """A float64 copy of the model run once, without a cache, over ``ids``: the recomputation generation is checked against."""
    passes = _FULL_PASSES.setdefault(run.model, {})
    key = tuple(ids)
    if key not in passes:
        model = copy.deepcopy(run.model).double().cpu()
        with torch.no_grad(), recording() as rec:
            model(torch.tensor([ids]))
        passes[key] = rec
    return passes[key]


def _sequence(run: ModelRun, ids: TensorName, new_ids: TensorName) -> tuple[list[int], list[int]]:
    prompt = [int(i) for i in run.cpu(ids)[0].tolist()]
    new = [int(i) for i in run.cpu(new_ids)[0].tolist()]
    return prompt, new


@check
def cache_matches_full_pass(run: ModelRun, out: TensorName, prompt_part: TensorName, ids: TensorName, new_ids: TensorName,
                            block: str, part: str) -> tuple[str, bool, str]:
    prompt, new = _sequence(run, ids, new_ids)
    fed = prompt + new[:-1]  # every byte the model was fed: the last generated one never is
    cached = run.t(out)  # (B, h, S, hs)
    T, S = len(prompt), len(fed)
    reference = full_pass(run, fed).tensor(f"{run.name(block)}.attn.{part}")  # (B, h, S, hs), float64
    same, detail = close(cached, reference, f"cached {part} vs a float64 pass over all {S} bytes without a cache")
    first, _ = close(cached[:, :, :T], run.t(prompt_part), f"first {T} positions vs the prompt pass")
    return f"the cache holds the {'keys' if part == 'k' else 'values'} of every byte fed so far", same and first and cached.shape[2] == S, (
        f"{S} positions = {T} prompt bytes + {len(new) - 1} generated bytes fed back; the first {T} equal the prompt pass's {part}: {first}; " + detail
    )


@check
def cache_matches_recomputation(run: ModelRun, out: TensorName, recomputed: TensorName, ids: TensorName, new_ids: TensorName) -> tuple[str, bool, str]:
    cached, again = run.t(out), run.t(recomputed)  # (B, N, V) each
    agree, detail = close(cached, again, "cached vs recomputed logits")
    prompt, new = _sequence(run, ids, new_ids)
    fed = prompt + new[:-1]
    reference = full_pass(run, fed).tensor("logits")[:, len(prompt) - 1:]  # (B, N, V): the positions that chose each new byte
    exact, detail64 = close(cached, reference, "cached vs a float64 pass")
    N = cached.shape[1]
    return "the cache gives the logits of a full recomputation", agree and exact, (
        f"{N} steps; {detail}; {detail64}"
    )


@check
def greedy_bytes(run: ModelRun, out: TensorName, logits: TensorName) -> tuple[str, bool, str]:
    got = [int(i) for i in run.cpu(out)[0].tolist()]
    chosen = [int(i) for i in run.t(logits)[0].argmax(-1).tolist()]
    passed = got == chosen and all(0 <= i < 256 for i in got)
    return "each byte is the most probable one at its step", passed, (
        f"all {len(got)} bytes are the argmax of their step's logits: {' '.join(f'0x{i:02X}' for i in got)}"
        if passed else f"bytes {got} differ from the argmaxes {chosen}"
    )


# ----------------------------------------------------------------------------- what training did

RECORD_BITS_TOLERANCE = 1e-3  # held-out bits per byte measured now vs at the end of training (float32 sums in another order)


@check
def training_effect(run: ModelRun, block_probs: str) -> tuple[str, bool, str]:
    """``block_probs`` names every block's attention probabilities, with {i} for the block index."""
    facts = run.inputs["training"]
    shown = facts["heads"]
    worst, n_rows = 0.0, 0
    for i, block in enumerate(shown):  # every statistic recomputed row by row, in float64, from the recorded weights
        probs = run.t(block_probs.format(i=i))[0]  # (h, T, T)
        T = probs.size(-1)
        n_rows = T - 1
        for h, stats in enumerate(block):
            rows = [probs[h, t, :t + 1] for t in range(1, T)]
            previous = sum(float(row[-2]) for row in rows) / n_rows
            same = sum(float(row[-1]) for row in rows) / n_rows
            entropy = sum(float(-(row[row > 0] * row[row > 0].log2()).sum()) for row in rows) / n_rows
            worst = max(worst, abs(previous - stats["previous"]), abs(same - stats["same"]), abs(entropy - stats["entropy"]))
    best = facts["best_head"]
    pairs = [(i, h) for i, block in enumerate(shown) for h in range(len(block))]
    best_ok = best is None if not pairs else list(max(pairs, key=lambda ih: shown[ih[0]][ih[1]]["previous"])) == best
    passed = worst <= TOLERANCE and best_ok
    detail = (f"{len(pairs)} heads' shares and entropies recomputed over {n_rows} query rows differ by at most {worst:.1e}; "
              f"the most previous-token-like head is the largest share: {best_ok}") if pairs else "a one-byte prompt has no previous byte to measure"
    record, checkpoint = facts["record"], facts["checkpoint"]
    if record:
        same_file = checkpoint["sha256"] == record.get("checkpoint_sha256")
        gap = abs(facts["held_out_bits"] - record["held_out_bits_per_byte"])
        passed = passed and same_file and gap <= RECORD_BITS_TOLERANCE
        detail += (f"; the checkpoint's sha256 equals the training record's: {same_file}; held-out bits per byte measured now "
                   f"{facts['held_out_bits']:.4f} vs {record['held_out_bits_per_byte']:.4f} at the end of training (tolerance {RECORD_BITS_TOLERANCE:g})")
    return "per-head statistics recomputed from the recorded attention" + ("; the checkpoint is the one trained" if record else ""), passed, detail
