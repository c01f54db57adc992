"""Put a fresh implementation's upstream files back beside our own, marked, so that `measure.py` can measure it again.

    python tests/trace_fresh/restore.py FOLDER --from GIT_DIR [--from GIT_DIR ...] [--to DEST]

FOLDER is a committed folder such as tests/trace_fresh/round7/sooftware_transformer (only our files: SOURCE.md,
driver.py or our_cells.json, our stubs, planted_bugs.json, markers.json, upstream.json); GIT_DIR a git directory
holding the commit upstream.json names (a clone or a mirror of the repository); DEST defaults to
/work/fresh_roundN/<folder>. Fetched public code is never committed, so the marked upstream files exist only where this
script writes them. Standard library and git only.

upstream.json: {"repository": "owner/name", "commit": SHA, "files": {"path in our folder": "path upstream"}}, and for
a notebook "notebook": {"file": "driver.ipynb", "from": "path of the upstream notebook", "cells": [...]}, each cell of
the notebook we trace in order: {"upstream_cell": N} (cell N of the upstream notebook, counted from 0 over all its
cells, as nbformat lists them; "drop_last_lines": M leaves out its last M lines, a test run of upstream's),
{"ours": N} (the cell of our_cells.json whose "cell" is N) or {"markdown": text} (a heading of ours); or "whole": true
instead of "cells": upstream's notebook as it is, outputs included, marked. A "files" value may also be
- {"from": path, "blocks": [N, ...], "separator": text, "drop_first_line_if": prefix}: a file of ours made of the
  ```{.python .input} blocks of a book's markdown page (d2l's form), each as it is but for a first line starting with
  the prefix (d2l's "%%tab pytorch"), joined by the separator ("cells" instead of "blocks": notebook cells);
- {"repository": "owner/name", "commit": SHA, "path": path}: a file of another repository or commit (its git
  directory given with a second --from);
- {"blob": SHA, "path": path}: one file by its git blob hash, where the repository could not be had whole
  (`git hash-object -w FILE` in any git directory puts it there).

markers.json: [{"file", "line", "comment"}, ...]: the marker comment put on that line (counted from 1) of that file, or,
with "cell", on that line of that cell of the notebook (markers with "upstream": false are on our own cells, which
already hold them). A marker is appended to the line ("code  # BREAKPOINT S12"), the line's trailing whitespace
dropped; on a line that ends in upstream's own comment it goes before that comment ("code  # BREAKPOINT S12  # theirs")
unless the marker says "placement": "after_comment" (then after it). Two markers on one line are joined in the order
markers.json lists them. Line endings (CRLF included) are kept.
"""
from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

OURS_NOT_COPIED = {"__pycache__"}


class RestoreError(Exception):
    """What stops a restore, said in one line."""


def has_object(git_dir: Path, name: str) -> bool:
    run = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "-e", name], capture_output=True)
    return run.returncode == 0


def git_object(git_dirs: list[Path], name: str) -> bytes:
    """The bytes of a git object (``commit:path`` or a blob's hash) from the first git directory holding it; a
    one-line error where none does."""
    holding = [git_dir for git_dir in git_dirs if has_object(git_dir, name)]
    if not holding:
        raise RestoreError(f"{name} is in none of {', '.join(map(str, git_dirs))}")
    return subprocess.run(["git", "--git-dir", str(holding[0]), "cat-file", "-p", name], capture_output=True,
                          check=True).stdout


def git_show(git_dirs: list[Path], commit: str, path: str) -> bytes:
    """The bytes of ``path`` at ``commit``."""
    return git_object(git_dirs, f"{commit}:{path}")


def comment_columns(text: str) -> dict[int, int]:
    """Line (from 1) -> the column where the line's trailing comment starts, for every line that ends in one.

    Read with Python's tokenizer, so a '#' inside a string is no comment; text the tokenizer cannot read (a notebook
    cell with IPython syntax) falls back to a scan of each line that skips quoted text."""
    columns: dict[int, int] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT and tok.line[: tok.start[1]].strip():
                columns[tok.start[0]] = tok.start[1]
        return columns
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    for number, line in enumerate(text.splitlines(), 1):
        quote = ""
        for column, char in enumerate(line):
            if quote:
                quote = "" if char == quote else quote
            elif char in "'\"":
                quote = char
            elif char == "#":
                if line[:column].strip():
                    columns[number] = column
                break
    return columns


def marked(text: str, markers: list[dict], where: str) -> str:
    """``text`` with each marker comment placed on its line (see the module's docstring)."""
    lines = text.splitlines(keepends=True)
    columns = comment_columns(text)
    on_line: dict[int, list[dict]] = {}
    for marker in markers:
        on_line.setdefault(marker["line"], []).append(marker)
    for number, here in on_line.items():
        if not 1 <= number <= len(lines):
            raise RestoreError(f"{where} has {len(lines)} lines, a marker is on line {number}")
        line = lines[number - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        comment = "  ".join(marker["comment"] for marker in here)
        column = columns.get(number)
        if column is not None and not any(marker.get("placement") == "after_comment" for marker in here):
            body = f"{body[:column].rstrip()}  {comment}  {body[column:].rstrip()}"
        else:
            body = f"{body.rstrip()}  {comment}"
        lines[number - 1] = body + ending
    return "".join(lines)


def cell_source(cell: dict) -> str:
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else source


def without_last_lines(source: str, count: int) -> str:
    """A cell without its last ``count`` lines (a test run at the end of an upstream cell), nor the blank lines
    they leave at its end."""
    if not count:
        return source
    return "\n".join(source.split("\n")[:-count]).rstrip(" \t\n")


def upstream_cells(git_dirs: list[Path], commit: str, path: str) -> list[dict]:
    return json.loads(git_show(git_dirs, commit, path).decode("utf-8"))["cells"]


def python_blocks(markdown: str) -> list[str]:
    """The code blocks of a book page written as ```{.python .input} ... ``` (d2l's form), each without its fences."""
    blocks, current = [], None
    for line in markdown.splitlines(keepends=True):
        if current is None and line.startswith("```{.python .input"):
            current = []
        elif current is not None and line.startswith("```"):
            blocks.append("".join(current))
            current = None
        elif current is not None:
            current.append(line)
    return blocks


def joined_file(git_dirs: list[Path], commit: str, spec: dict) -> str:
    """A file of ours made of upstream cells or book blocks, each as it is, in the order given."""
    if "cells" in spec:
        cells = upstream_cells(git_dirs, commit, spec["from"])
        parts = [cell_source(cells[n]) for n in spec["cells"]]
    else:
        blocks = python_blocks(git_show(git_dirs, commit, spec["from"]).decode("utf-8"))
        parts = [blocks[n] for n in spec["blocks"]]
    drop = spec.get("drop_first_line_if")
    if drop:
        parts = [part.split("\n", 1)[1] if part.startswith(drop) else part for part in parts]
    return spec.get("separator", "\n\n").join(parts)


def whole_notebook(git_dirs: list[Path], commit: str, spec: dict, markers: list[dict]) -> str:
    """Upstream's notebook as it is, outputs included, its cells marked: written back as Jupyter writes it (indent 1,
    non-ASCII kept), so that every byte but the markers is upstream's."""
    data = json.loads(git_show(git_dirs, commit, spec["from"]).decode("utf-8"))
    for index, cell in enumerate(data["cells"]):
        on_cell = [m for m in markers if m.get("cell") == index]
        if on_cell:
            text = marked(cell_source(cell), on_cell, f"cell {index}")
            cell["source"] = text.splitlines(keepends=True) if isinstance(cell["source"], list) else text
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def notebook(git_dirs: list[Path], commit: str, spec: dict, ours: list[dict], markers: list[dict]) -> str:
    """The notebook we trace: its cells in order, upstream's marked, ours as our_cells.json holds them."""
    if spec.get("whole"):
        return whole_notebook(git_dirs, commit, spec, markers)
    upstream = upstream_cells(git_dirs, commit, spec["from"])
    own = {cell["cell"]: cell["source"] for cell in ours}
    cells = []
    for index, layout in enumerate(spec["cells"]):
        if "markdown" in layout:
            cells.append({"cell_type": "markdown", "metadata": {}, "source": layout["markdown"]})
            continue
        if "ours" in layout:
            source = own[layout["ours"]]
        else:
            on_cell = [m for m in markers if m.get("cell") == index and m.get("upstream", True)]
            source = marked(without_last_lines(cell_source(upstream[layout["upstream_cell"]]),
                                               layout.get("drop_last_lines", 0)),
                            on_cell, f"cell {index} (upstream cell {layout['upstream_cell']})")
        cells.append({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source})
    unplaced = [m for m in markers if m.get("cell") is not None and m["cell"] >= len(cells)]
    if unplaced:
        raise RestoreError(f"markers on cells the notebook does not have: {unplaced}")
    return json.dumps({"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                                   "name": "python3"}},
                       "nbformat": 4, "nbformat_minor": 5}, indent=1, ensure_ascii=False) + "\n"


def restore(folder: Path, git_dirs: list[Path], dest: Path) -> list[str]:
    """Rebuild ``dest`` from ``folder`` and the repositories at ``git_dirs``; the files written from upstream. Built
    beside ``dest`` first, so that a restore that fails leaves what was there."""
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        written = build(folder, git_dirs, partial)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    if dest.exists():
        shutil.rmtree(dest)
    partial.rename(dest)
    return written


def build(folder: Path, git_dirs: list[Path], dest: Path) -> list[str]:
    spec = json.loads((folder / "upstream.json").read_text(encoding="utf-8"))
    markers = json.loads((folder / "markers.json").read_text(encoding="utf-8"))
    commit = spec["commit"]
    shutil.copytree(folder, dest, ignore=shutil.ignore_patterns(*OURS_NOT_COPIED))
    written = []
    for ours, source in spec.get("files", {}).items():
        on_file = [m for m in markers if m["file"] == ours and m.get("cell") is None]
        if isinstance(source, dict) and ("path" in source or "blob" in source):  # another commit's, or one blob
            data = git_object(git_dirs, source["blob"]) if "blob" in source else \
                git_show(git_dirs, source["commit"], source["path"])
            if on_file:
                data = marked(data.decode("utf-8"), on_file, ours).encode("utf-8")
        elif isinstance(source, dict):
            data = marked(joined_file(git_dirs, commit, source), on_file, ours).encode("utf-8")
        elif on_file:
            data = marked(git_show(git_dirs, commit, source).decode("utf-8"), on_file, ours).encode("utf-8")
        else:
            data = git_show(git_dirs, commit, source)  # unmarked: the bytes as they are
        target = dest / ours
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        written.append(ours)
    if "notebook" in spec:
        nb = spec["notebook"]
        own_cells = folder / "our_cells.json"
        ours_cells = json.loads(own_cells.read_text(encoding="utf-8")) if own_cells.exists() else []
        on_notebook = [m for m in markers if m["file"] == nb["file"]]
        (dest / nb["file"]).write_text(notebook(git_dirs, commit, nb, ours_cells, on_notebook), encoding="utf-8")
        written.append(nb["file"])
    unknown = {m["file"] for m in markers} - set(written) - {p.relative_to(folder).as_posix()
                                                              for p in folder.rglob("*") if p.is_file()}
    if unknown:
        raise RestoreError(f"markers.json names files upstream.json does not give: {sorted(unknown)}")
    return written


def default_dest(folder: Path) -> Path:
    return Path(f"/work/fresh_{folder.parent.name}") / folder.name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="put a fresh round's upstream files back beside ours, marked")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--from", dest="git_dirs", type=Path, action="append", required=True,
                        help="a git directory holding the commit (again for a file of another repository)")
    parser.add_argument("--to", dest="dest", type=Path, help="default: /work/fresh_roundN/<folder>")
    args = parser.parse_args(argv)
    folder = args.folder.resolve()
    if not (folder / "upstream.json").is_file():
        print(f"restore: {folder} has no upstream.json", file=sys.stderr)
        return 2
    dest = (args.dest or default_dest(folder)).resolve()
    try:
        written = restore(folder, args.git_dirs, dest)
    except (RestoreError, OSError, ValueError, KeyError, IndexError) as error:
        print(f"restore: {folder.name}: {error}", file=sys.stderr)
        return 1
    print(f"restored {folder.name} into {dest}: {len(written)} upstream file(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
