"""A model's shape legend, declared once, as data: its symbols, what each means, and how some follow from others.

Each model file writes its one shape legend as a table in its docstring, as nanoGPT writes it in a comment, and reads
it into ``LEGEND = Legend.parse(__doc__, relations=...)``; its record points' shapes and its comments use these
symbols, and everything else reads the object: the report's overview page (the legend table), the run's sizes
(``Legend.sizes``: the relations fill in what follows), the trace's binding of sizes from a student's tensors
(``Legend.derivations``) and the explorer's axis labels (``Legend.axis_labels``).

    '''...
    Shape legend:
        B   batch size
        C   model width
        h   attention heads
        hs  head size C / h
    '''
    LEGEND = Legend.parse(__doc__, relations=(Quotient("hs", "C", "h"),))
    LEGEND.sizes(B=1, C=128, h=4)  # {"B": 1, "C": 128, "h": 4, "hs": 32}

A ``Legend`` is the mapping symbol -> meaning that the pages show. ``local`` symbols are a module's own axis names,
bound per instance (``record_axes``): they are explained in the file but are no size of a run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

__all__ = ["Legend", "Offset", "Quotient"]

Rule = Callable[[Mapping[str, int]], int]  # a size computed from others; KeyError when one of them is unknown


@dataclass(frozen=True)
class Quotient:
    """``symbol = whole / part`` (the head size hs = C / h), usable both ways: part = whole / symbol."""

    symbol: str
    whole: str
    part: str

    @property
    def symbols(self) -> tuple[str, ...]:
        return self.symbol, self.whole, self.part

    def derivations(self) -> tuple[tuple[str, Rule], ...]:
        return ((self.symbol, lambda d: d[self.whole] // d[self.part]),
                (self.part, lambda d: d[self.whole] // d[self.symbol]))

    def __str__(self) -> str:
        return f"{self.symbol} = {self.whole} / {self.part}"


@dataclass(frozen=True)
class Offset:
    """``symbol = base + offset`` (the ViT's tokens N1 = N + 1 with [CLS]), usable both ways: base = symbol - offset."""

    symbol: str
    base: str
    offset: int

    @property
    def symbols(self) -> tuple[str, ...]:
        return self.symbol, self.base

    def derivations(self) -> tuple[tuple[str, Rule], ...]:
        return ((self.symbol, lambda d: d[self.base] + self.offset),
                (self.base, lambda d: d[self.symbol] - self.offset))

    def __str__(self) -> str:
        return f"{self.symbol} = {self.base} + {self.offset}"


Relation = Quotient | Offset


class Legend(dict[str, str]):
    """Symbol -> meaning, in the order the report's pages list them, plus the relations between the symbols."""

    def __init__(self, meanings: Mapping[str, str] | None = None, *, relations: Iterable[Relation] = (),
                 local: Mapping[str, str] | None = None) -> None:
        super().__init__(meanings or {})
        self.relations = tuple(relations)
        self.local = dict(local or {})
        for relation in self.relations:
            if unknown := [s for s in relation.symbols if s not in self]:
                raise ValueError(f"relation {relation}: {', '.join(unknown)} not in the legend ({', '.join(self)})")
        if clash := sorted(set(self.local) & set(self)):
            raise ValueError(f"local symbols {clash} are also sizes of the run")

    @classmethod
    def parse(cls, docstring: str, *, relations: Iterable[Relation] = ()) -> Legend:
        """The legend a model file writes in its docstring, nanoGPT style: under a line that begins "Shape legend",
        one indented line per symbol (``B   batch size``); under a line that begins "Module axes", a shared module's
        own symbols (``Lq, Lk   query and key lengths``: several symbols, one meaning). A blank or unindented line
        ends a block."""
        blocks: dict[str, dict[str, str]] = {"Shape legend": {}, "Module axes": {}}
        current = None
        for line in docstring.splitlines():
            if not line.startswith(" ") or not line.strip():
                current = next((blocks[name] for name in blocks if line.startswith(name)), None)
                continue
            if current is not None:
                symbols, meaning = re.split(r"\s{2,}", line.strip(), maxsplit=1)
                current.update({symbol: meaning for symbol in symbols.split(", ")})
        if not blocks["Shape legend"]:
            raise ValueError("the docstring has no shape legend: a line beginning 'Shape legend', then one indented "
                             "line per symbol")
        return cls(blocks["Shape legend"], relations=relations, local=blocks["Module axes"])

    def derivations(self) -> tuple[tuple[str, Rule], ...]:
        """(symbol, rule) for every way a relation gives one size from the others, relation by relation."""
        return tuple(derivation for relation in self.relations for derivation in relation.derivations())

    def derive_into(self, dims: dict[str, int]) -> bool:
        """Add to ``dims`` each size a relation gives from those already in it (one pass over the relations, a rule
        whose sizes are missing, or give a zero divisor, passed over); whether any was added."""
        added = False
        for name, rule in self.derivations():
            if name not in dims:
                try:
                    dims[name] = rule(dims)
                    added = True
                except (KeyError, ZeroDivisionError):
                    pass
        return added

    def sizes(self, **given: int) -> dict[str, int]:
        """Every symbol's size for one run: ``given`` plus what the relations derive, each derived size right after
        the last size it is derived from. Every symbol must be given or derived, and nothing else may be given."""
        if unknown := [s for s in given if s not in self]:
            raise ValueError(f"sizes of {', '.join(unknown)}: no such symbol in the legend ({', '.join(self)})")
        sizes = dict(given)
        for relation in self.relations:
            symbol, rule = relation.derivations()[0]
            if symbol in sizes:
                raise ValueError(f"{symbol} follows from {relation}; do not give it")
            sources = [s for s in relation.symbols if s != symbol]
            order = list(sizes)
            at = max(order.index(s) for s in sources) + 1
            sizes = dict([*list(sizes.items())[:at], (symbol, rule(sizes)), *list(sizes.items())[at:]])
        if missing := [s for s in self if s not in sizes]:
            raise ValueError(f"no size for {', '.join(missing)}")
        return sizes

    def axis_labels(self, **keys: str) -> dict[str, str]:
        """The explorer's label key per symbol (``T="bytes"``), each symbol checked against the legend."""
        if unknown := [s for s in keys if s not in self]:
            raise ValueError(f"axis labels for {', '.join(unknown)}: no such symbol in the legend ({', '.join(self)})")
        return dict(keys)

    def text(self) -> str:
        """The legend as the table nanoGPT writes in a comment: symbol and meaning, then local symbols and relations."""
        rows = [*self.items(), *self.local.items()]
        width = max(len(symbol) for symbol, _ in rows)
        lines = [f"{symbol:<{width}}  {meaning}" for symbol, meaning in rows]
        return "\n".join([*lines, *(f"({relation})" for relation in self.relations)])
