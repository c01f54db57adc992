"""Tokens merged inside the blocks (token merging, ToMe: Bolya et al. 2023): a block that merges pairs of similar
tokens after its attention's residual sum hands fewer tokens to its MLP, and each block fewer to the next (Ctrl408's
ViT: 17 tokens in the first block's attention, 15 in its MLP, 11 after the last block). The run's token count N1 is
the first block's, bound from its attention; the steps after the merge named with N1 tokens hold fewer, so they fit no
binding and every check on them was "unrecognised" (the shape (2, 15, 16) cannot be read as (B, N1, C)).

Read once per run, from the shapes: a step of the stream, (B, N1, C) or (B, N1, M), that holds fewer than N1
tokens, after such a step (in the catalogue's order) that holds all N1, is read with its own token count
(``MergedTokens.dims_for``), and the dimensions only it shows (the MLP's width M) taken from it. A step holding fewer
tokens before any step held N1 (tokens joining later: extra_tokens.py) is not this, nor keys or values of fewer tokens
than the queries (an attention's own reduction, PVT's or Twins'), nor a grid of tokens (token_grid.py). The MLP's
residual sum, whose stream is a merge of the attention's, is read by checks/merged_sum.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MergedTokens:
    """The steps read with fewer tokens than the run's N1, by label, and how many each holds."""

    tokens: int
    steps: tuple[tuple[str, int], ...]

    def says(self) -> str:
        counts = sorted({count for _, count in self.steps}, reverse=True)
        return (f"tokens merged inside the blocks: {self.tokens} in the first block's attention, then "
                f"{', '.join(map(str, counts))}")

    def rests_on(self) -> str:
        return (f"{', '.join(step for step, _ in self.steps[:6])} hold fewer tokens than the {self.tokens} of the "
                "steps before them: each is read with its own token count")

    def dims_for(self, dims: Mapping[str, int], named: Sequence[str], shape: Sequence[int]) -> Mapping[str, int]:
        """The dimensions a step holding ``shape`` is read with: its own token count where it holds one of the merged
        counts, the dimensions only it shows bound from its shape; else ``dims`` itself."""
        axis = list(named).index("N1") if "N1" in named else -1
        if not 0 <= axis < len(shape) or shape[axis] not in {count for _, count in self.steps}:
            return dims
        own = {name: size for name, size in zip(named, shape) if name.isalpha() and name not in dims}
        return {**dims, **own, "N1": shape[axis], **({"N": shape[axis] - 1} if "N" in dims else {})}


def find_merged_tokens(steps: Sequence[Any], dims: Mapping[str, int],
                       read: Any) -> MergedTokens | None:
    """From the captured steps in the catalogue's order (``StepShape``s; ``read(step)``: its value as the run reads
    it): the steps after a step of all N1 tokens that hold fewer (more than one), None where none does."""
    tokens, full, merged = dims.get("N1"), False, []
    if not tokens:
        return None
    for step in steps:
        if tuple(step.named[:2]) != ("B", "N1") or len(step.named) != 3 or step.value is None:
            continue  # the stream's steps only: keys or values of fewer tokens are an attention's own matter
        value = read(step)
        axis = step.named.index("N1")
        if value.dim() != len(step.named):  # a grid of tokens (B, H', W', C) is read flattened (token_grid.py)
            continue
        size = value.shape[axis]
        full = full or size == tokens
        if full and 1 < size < tokens:
            merged.append((step.step, size))
    return MergedTokens(tokens, tuple(merged)) if merged else None
