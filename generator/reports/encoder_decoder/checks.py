"""Checks specific to the encoder–decoder report, listed in ``CHECKS`` (the report merges them with
transformer_trace.checks.CHECKS)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from transformer_trace.checks import THIS, Check, close, whole_ids
from transformer_trace.checks.evidence import BugForm, Fit
from transformer_trace.registry import Registry
from transformer_trace.sources import InputRef, NotCheckable, ParamRef, Ref, TensorSource


@dataclass(frozen=True, kw_only=True)
class TokenIds(Check):
    """The IDs decode back to the sentence: ``sentence``, ``vocab`` and ``words`` are the run's text, its word -> ID
    table
    and ID -> word list; without them (captured tensors alone), the IDs are whole numbers ≥ 0."""

    ids: Ref = THIS
    sentence: InputRef
    vocab: InputRef
    words: InputRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        try:
            tokens, table, words = s.input(self.sentence).split(), s.input(self.vocab), s.input(self.words)
        except NotCheckable:  # captured without the run's text (a trace): what the IDs alone show
            return whole_ids(s.t(self.ids))
        got = [int(i) for i in s.t(self.ids).flatten().tolist()]
        decoded = [words[i] for i in got]
        passed = decoded == tokens and len(got) == len(tokens) and all(0 <= i < len(table) for i in got)
        return "IDs decode back to the sentence", passed, (
            f"{len(got)} IDs, each below the vocabulary size {len(table)}, look up to the {len(tokens)} words of the "
            "sentence in order"
            if passed else f"decoded {decoded!r}, expected {tokens!r}"
        )


@dataclass(frozen=True, kw_only=True)
class EmbeddingTableRows(Check):
    """The captured table is the model's ``parameter``, one row per word of ``vocab``."""

    table: Ref = THIS
    parameter: ParamRef
    vocab: InputRef

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        captured = s.t(self.table)
        vocab_size = len(s.input(self.vocab))
        same, detail = close(captured, s.parameter(self.parameter), f"captured table vs the model's {self.parameter}")
        passed = same and captured.shape[0] == vocab_size
        return "the model's own table, one row per vocabulary word", passed, (
            f"{captured.shape[0]} rows for {vocab_size} distinct words, {captured.shape[1]} features each; " + detail
        )


def _added_twice(check: SinusoidalPositions, s: TensorSource) -> Fit:
    added, expected = check.added_and_table(s)
    fits, detail = close(added, 2 * expected, "added term vs twice the sin/cos formula")
    return Fit(fits, f"the positions were added twice: your {s.name(check.out)} is its input plus twice the "
               f"sinusoidal table ({detail})" if fits else detail)


@dataclass(frozen=True, kw_only=True)
class SinusoidalPositions(Check):
    """Tensors only: ``out`` − ``before`` is the sinusoidal encoding sin/cos(pos / 10000^(2i/C))."""

    BUG_FORMS = (BugForm("positions added twice", "the added term vs twice the table", _added_twice),)

    out: Ref = THIS
    before: Ref

    def added_and_table(self, s: TensorSource) -> tuple[torch.Tensor, torch.Tensor]:
        """(out − before, the paper's sin/cos table as added)."""
        added = s.t(self.out) - s.t(self.before)  # (B, L, C)
        L, C = added.shape[-2:]
        pos = torch.arange(L, dtype=torch.float64)[:, None]
        i = torch.arange(C, dtype=torch.float64)[None, :]
        angle = pos / torch.pow(10000.0, (2 * torch.div(i, 2, rounding_mode="floor")) / C)
        return added, torch.where(i % 2 == 0, torch.sin(angle), torch.cos(angle)).expand_as(added)

    def verify(self, s: TensorSource) -> tuple[str, bool, str]:
        added, expected = self.added_and_table(s)
        passed, detail = close(added, expected, "added term vs sin/cos formula")
        return "the added term is the sinusoidal encoding", passed, detail


CHECKS: Registry[type[Check]] = Registry("check",
                                         [(cls.key(), cls) for cls in (TokenIds, EmbeddingTableRows,
                                                                       SinusoidalPositions)])
