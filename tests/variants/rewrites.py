"""Source rewrites of the base scripts (two examples shrunk, shrunk.py; bases/gpt.py), in the spirit of metamorphic
testing (issue 40 point 6): a **correct** rewrite changes how a step is written, never what it computes (einsum for
@, a mask of −1e9 for −inf, sequence-first tensors ...), so `trace` must give it no red verdict; a **bug** rewrite
plants one named bug, which `trace` must name as the first failure, at the snapshot where it happens, with its
diagnosis (the evidence's form, generator/checks/evidence.py).

A rewrite is a list of exact text replacements, each of which must match the source **exactly once**: a base script
edited so that a rewrite no longer applies fails the test at once, instead of silently testing the base again."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

BASES = Path(__file__).resolve().parent / "bases"


@dataclass(frozen=True)
class Rewrite:
    """A named source transformation: ``edits`` are (old, new) texts, each old text found exactly once."""

    name: str
    says: str  # what the rewrite does, and why it computes the same (or which bug it plants)
    edits: tuple[tuple[str, str], ...]

    def apply(self, source: str) -> str:
        for old, new in self.edits:
            found = source.count(old)
            assert found == 1, f"rewrite {self.name!r}: {old.splitlines()[0]!r}… found {found} times, not once"
            source = source.replace(old, new)
        return source


@dataclass(frozen=True)
class Bug(Rewrite):
    """A bug rewrite, with where `trace` must name it: the first failing snapshot and the evidence's form."""

    first: str = ""  # the snapshot label, "S13"
    form: str = ""  # the evidence's name: a bug form or a property (generator/checks/evidence.py)


NOTEBOOK = Rewrite("notebook", "the script's top-level statements as the code cells of a notebook (a markdown cell "
                   "first), traced as `trace NOTEBOOK.ipynb` runs its cells in order", ())


@dataclass(frozen=True)
class Variant:
    """A base script with rewrites applied in order: correct ones, then at most one bug (the last)."""

    base: str  # "vit", "encoder_decoder" (examples shrunk: shrunk.py) or "gpt" (a file under bases/, without .py)
    rewrites: tuple[Rewrite, ...]

    @property
    def bug(self) -> Bug | None:
        last = self.rewrites[-1] if self.rewrites else None
        return last if isinstance(last, Bug) else None

    @property
    def id(self) -> str:
        return f"{self.base}: {' + '.join(r.name for r in self.rewrites) or 'as written'}"

    def source(self) -> str:
        from tests.variants.shrunk import example_base  # imported here: shrunk.py's shrinks are Rewrites

        source = example_base(self.base) or (BASES / f"{self.base}.py").read_text(encoding="utf-8")
        for rewrite in self.rewrites:
            source = rewrite.apply(source)
        return source

    def write(self, folder: Path) -> Path:
        """The variant written into ``folder``: a script, or a notebook when NOTEBOOK is among its rewrites."""
        folder.mkdir(parents=True, exist_ok=True)
        source = self.source()
        if NOTEBOOK in self.rewrites:
            path = folder / f"{self.base}.ipynb"
            path.write_text(json.dumps(as_notebook(source, self.id)), encoding="utf-8")
        else:
            path = folder / f"{self.base}.py"
            path.write_text(source, encoding="utf-8")
        return path


def top_level_chunks(source: str) -> list[str]:
    """The script cut before each top-level statement that follows a blank line: a function, a class, a block of
    assignments each become one cell, as a notebook author would cut them."""
    chunks: list[list[str]] = [[]]
    previous_blank = False
    for line in source.splitlines():
        starts = line[:1] not in ("", " ", "\t", ")", "]", "}", "#") and previous_blank
        if starts and any(text.strip() for text in chunks[-1]):
            chunks.append([])
        chunks[-1].append(line)
        previous_blank = not line.strip()
    return ["\n".join(chunk).strip("\n") for chunk in chunks if any(text.strip() for text in chunk)]


def as_notebook(source: str, title: str) -> dict:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": [f"# {title}"]}]
    for chunk in top_level_chunks(source):
        lines = chunk.splitlines(keepends=True)
        cells.append({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": lines})
    return {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                        "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5}
