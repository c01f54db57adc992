"""Read-only views of captured tensors for pages: statistics, value slices, numbers."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import torch

from transformer_trace.sources import NotCheckable


class MissingEntry(NotCheckable, IndexError):
    """An entry a text asks of a tensor that the tensor (a user's smaller one) does not have."""

    def __str__(self) -> str:
        return Exception.__str__(self)


def fmt(value: float, digits: int = 4) -> str:
    """A number as a page prints it: fixed decimals, or 'inf'/'-inf'/'nan'."""
    value = float(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "-inf" if value < 0 else "inf"
    text = f"{value:.{digits}f}"
    return "0." + "0" * digits if text == "-0." + "0" * digits else text


def json_number(value: float) -> float | str:
    """JSON has no inf/nan: those become the strings 'inf', '-inf', 'nan'."""
    value = float(value)
    return value if math.isfinite(value) else fmt(value)


@dataclass
class TensorView:
    """A captured tensor (on the CPU) with what a snapshot page shows of it."""

    name: str
    tensor: torch.Tensor

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.tensor.shape)

    @property
    def dtype(self) -> str:
        return str(self.tensor.dtype).removeprefix("torch.")

    @property
    def numel(self) -> int:
        return self.tensor.numel()

    @cached_property
    def stats(self) -> dict[str, float | int]:
        t = self.tensor.detach().double()
        finite, nan, inf = t, 0, 0
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):  # masks only when something is not finite
            finite = t[torch.isfinite(t)]
            nan, inf = int(torch.isnan(t).sum()), int(torch.isinf(t).sum())
        if finite.numel() == 0:
            return {"min": math.nan, "max": math.nan, "mean": math.nan, "std": math.nan, "nan": nan, "inf": inf}
        return {
            "min": float(finite.min()),
            "max": float(finite.max()),
            "mean": float(finite.mean()),
            "std": float(finite.std(unbiased=False)) if finite.numel() > 1 else 0.0,
            "nan": nan,
            "inf": inf,
        }

    def first(self, n: int = 16) -> list[float]:
        return [float(x) for x in self.tensor.flatten()[:n].tolist()]

    def _entry(self, index: tuple[int, ...]) -> torch.Tensor:
        try:
            return self.tensor[index]
        except IndexError:
            raise MissingEntry(f"entry {list(index)} of {self.name}", f"the tensor has shape {self.shape}") from None

    def _number(self, what: str, index: tuple[int, ...], read: Callable[[torch.Tensor], Any]) -> Any:
        """``read`` of the entry at ``index``; a value it cannot be read from (empty, boolean, complex, on the meta
        device: a traced script's) is a MissingEntry naming what it is, as an entry the tensor lacks."""
        entry = self._entry(index)
        try:
            return read(entry)
        except (RuntimeError, IndexError, TypeError, ValueError, NotImplementedError):
            raise MissingEntry(f"{what} of {self.name}{list(index) if index else ''}",
                               f"the tensor is {self.dtype} of shape {self.shape}") from None

    def at(self, *index: int) -> float:
        return self._number("the value", index, float)

    def row(self, *index: int) -> list[float]:
        return self._number("the values", index, lambda t: [float(x) for x in t.flatten().tolist()])

    def argmax(self, *index: int) -> int:
        return self._number("the largest entry", index, lambda t: int(t.argmax()))

    def max_index(self) -> list[int]:
        """Index of the largest finite entry, one int per dimension."""
        if self.tensor.numel() == 0:
            return []
        t = self.tensor.double().nan_to_num(nan=-math.inf, posinf=-math.inf, neginf=-math.inf)
        flat = int(t.flatten().argmax())
        # plain arithmetic, not torch.unravel_index: that one imports torch.fx's symbolic shapes and sympy
        # (~0.6 s) on first use
        return [flat // math.prod(t.shape[d + 1:]) % t.shape[d] for d in range(t.dim())]

    def mean_norm(self) -> float:
        """Average length of the vectors along the last dimension."""
        return float(self.tensor.double().norm(dim=-1).mean())

    def count(self, predicate: str) -> int:
        """How many entries are zero / positive / negative."""
        t = self.tensor
        return int({"zero": t == 0, "positive": t > 0, "negative": t < 0}[predicate].sum())

    # -------------------------------------------------------------- debugger-style slice

    def slice_text(self, rows: int = 6, cols: int = 8, whole: bool = False) -> tuple[str, str]:
        """(index expression, text grid) of the leading block of the tensor.

        Leading dimensions are fixed at 0; the last two show up to rows x cols values,
        with an ellipsis where the tensor continues, like a debugger's array view.
        ``whole``: every value, nested brackets over every dimension (for a report of small tensors).
        """
        t = self.tensor
        if t.numel() == 0 and t.dim() > 0:  # nothing to show but that it is empty
            return "", "[]"
        if whole and t.dim() > 0:
            return "", self._nested(t.tolist(), 0)
        if t.dim() == 0:
            return "", fmt(float(t))
        lead = [0] * max(0, t.dim() - 2)
        block = t[tuple(lead)] if lead else t
        if block.dim() == 1:
            shown = block[:cols * 2]
            index = f"[{', '.join(map(str, lead + [f':{len(shown)}']))}]"
            cells = [self._cell(v) for v in shown.tolist()]
            more = " ..." if block.numel() > len(shown) else ""
            return index, "[" + ", ".join(cells) + more + "]"
        r, c = min(rows, block.shape[0]), min(cols, block.shape[1])
        index = "[" + ", ".join([*map(str, lead), f":{r}", f":{c}"]) + "]"
        grid = [[self._cell(v) for v in row] for row in block[:r, :c].tolist()]
        width = max(len(x) for row in grid for x in row)
        lines = []
        for i, row in enumerate(grid):
            line = "  ".join(x.rjust(width) for x in row)
            if block.shape[1] > c:
                line += "  ..."
            lines.append(("[[" if i == 0 else " [") + line + "]")
        if block.shape[0] > r:
            lines.append(" ...")
        lines[-1] += "]"
        return index, "\n".join(lines)

    def _nested(self, values: list, depth: int, width: int = 0) -> str:
        """Every value, one innermost row per line, right-aligned; a blank line between blocks of rows."""
        if depth == 0:
            width = max(len(self._cell(v)) for v in self.tensor.flatten().tolist())
        if not isinstance(values[0], list):
            return "[" + "  ".join(self._cell(v).rjust(width) for v in values) + "]"
        inner = [self._nested(v, depth + 1, width) for v in values]
        return "[" + ("\n" * min(2, self.tensor.dim() - depth - 1) + " " * (depth + 1)).join(inner) + "]"

    def _cell(self, value: float | int | bool | complex) -> str:
        if isinstance(value, complex):
            return f"{fmt(value.real)}{'-' if value.imag < 0 else '+'}{fmt(abs(value.imag))}j"
        if isinstance(value, bool) or not self.tensor.is_floating_point():
            return str(int(value))
        return fmt(value)
