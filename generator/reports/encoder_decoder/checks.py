"""Checks specific to the encoder–decoder report; they register with the generic ones in generator.checks."""

from __future__ import annotations

import torch

from generator.checks import TensorName, check, close
from generator.run import ModelRun


@check
def token_ids(run: ModelRun, ids: TensorName, sentence: str, vocab: str, words: str) -> tuple[str, bool, str]:
    """``sentence``, ``vocab`` and ``words`` name run inputs: the text, its word -> ID table and ID -> word list."""
    tokens = run.inputs[sentence].split()
    table = run.inputs[vocab]
    got = [int(i) for i in run.t(ids).flatten().tolist()]
    decoded = [run.inputs[words][i] for i in got]
    passed = decoded == tokens and len(got) == len(tokens) and all(0 <= i < len(table) for i in got)
    return "IDs decode back to the sentence", passed, (
        f"{len(got)} IDs, each below the vocabulary size {len(table)}, look up to the {len(tokens)} words of the sentence in order"
        if passed else f"decoded {decoded!r}, expected {tokens!r}"
    )


@check
def embedding_table_rows(run: ModelRun, table: TensorName, parameter: str, vocab: str) -> tuple[str, bool, str]:
    captured = run.t(table)
    vocab_size = len(run.inputs[vocab])
    same, detail = close(captured, run.parameter(parameter), f"captured table vs the model's {parameter}")
    passed = same and captured.shape[0] == vocab_size
    return "the model's own table, one row per vocabulary word", passed, (
        f"{captured.shape[0]} rows for {vocab_size} distinct words, {captured.shape[1]} features each; " + detail
    )


@check
def sinusoidal_positions(run: ModelRun, out: TensorName, before: TensorName) -> tuple[str, bool, str]:
    added = run.t(out) - run.t(before)  # (B, L, C)
    L, C = added.shape[-2:]
    pos = torch.arange(L, dtype=torch.float64)[:, None]
    i = torch.arange(C, dtype=torch.float64)[None, :]
    angle = pos / torch.pow(10000.0, (2 * torch.div(i, 2, rounding_mode="floor")) / C)
    expected = torch.where(i % 2 == 0, torch.sin(angle), torch.cos(angle)).expand_as(added)
    passed, detail = close(added, expected, "added term vs sin/cos formula")
    return "the added term is the sinusoidal encoding", passed, detail
