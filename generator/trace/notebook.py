"""`trace NOTEBOOK.ipynb`: a notebook becomes a script that runs its code cells in order in one interpreter, as
"Run all" would, and every script line maps back to its cell and line (the pages say "cell 7, line 3").

The script is written beside the notebook (its folder first on sys.path, its own modules importable, as in Jupyter) and
removed after the run. It starts with a header line naming the notebook and each cell starts with a `# %% cell N` line,
so a line's cell is read from the script's own text (``cell_of``): whatever runs the script and builds the pages keeps
that text (capture.sources), and nothing else needs to travel with it. IPython magics and shell lines (`%…`, `!…`,
`x = !…`, at the start of a logical line as Python's tokenizer reads the cell: a string's or a bracket's continued line
is no magic) become `pass` and a cell magic (`%%bash`…) skips its cell (`%%time` and `%%capture` only skip their own
line); each is listed on the overview. `display` is IPython's when IPython is installed, else prints its arguments;
`get_ipython()` runs `%matplotlib` as its line is run (skipped) and says in the script's error that other magics do
not run. Each cell is compiled as IPython compiles it: a cell with a top-level `await` (`async for`, `async with`) runs
to its end in an event loop the cells share, as IPython's autoawait runs it (instrument.py, bootstrap.py).
Cells are numbered as the notebook shows them, markdown cells included (the first cell is cell 1)."""

from __future__ import annotations

import ast
import json
import os
import re
import tempfile
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from transformer_trace.errors import UserError
from transformer_trace.trace.child.protocol import CELL_LINE, NOTEBOOK_HEADER

if TYPE_CHECKING:
    from transformer_trace.trace.reading.capture import Capture

HEADER = NOTEBOOK_HEADER
_HEADER = re.compile(re.escape(HEADER).replace(re.escape("{name}"), "(?P<name>.+)"))
_CELL = re.compile(re.escape(CELL_LINE).replace(re.escape("{number}"), r"(\d+)") + "$")
PROLOGUE = """try:  # as in Jupyter: display() shows a value (prints it where IPython is not installed)
    from IPython.display import display
except ImportError:
    def display(*values, **options):
        print(*values)
exec(compile('''class _NoMagics:  # `%matplotlib` is skipped, as its line is; other magics and the shell do not run
    def run_line_magic(self, name, line='', *more):
        if name != 'matplotlib':
            raise RuntimeError(f'get_ipython().run_line_magic({name!r}, ...): IPython magics do not run under trace')
    def run_cell_magic(self, name, *more):
        raise RuntimeError(f'get_ipython().run_cell_magic({name!r}, ...): IPython magics do not run under trace')
    def system(self, command, *more):
        raise RuntimeError(f'get_ipython().system({command!r}): shell commands do not run under trace')
    getoutput = system
def get_ipython():
    return _NoMagics()
''', "<get_ipython under trace>", "exec"))  # its own file name: an error it raises names the cell that called it
"""
RUN_BODY_MAGICS = {"time", "capture"}  # cell magics whose body is Python that "Run all" runs once
_MAGIC_LINE = re.compile(r"^(?P<indent>\s*)(?:[%!]|[\w.\s,]+=\s*[%!])")


@dataclass
class Skipped:
    cell: int
    line: int
    text: str
    why: str

    def __str__(self) -> str:
        return f"cell {self.cell}, line {self.line}: {self.text.strip()!r} ({self.why}) was skipped"


@dataclass
class NotebookScript:
    notebook: Path
    text: str
    skipped: list[Skipped] = field(default_factory=list)
    cells: int = 0  # code cells run


def _cells(notebook: Path) -> list[dict[str, object]]:
    try:
        data = json.loads(notebook.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise UserError(f"{notebook}: not a UTF-8 text file") from None
    except ValueError as exc:
        raise UserError(f"{notebook}: not a Jupyter notebook (not JSON: {exc})") from None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        raise UserError(f"{notebook}: not a Jupyter notebook (no list of cells; nbformat 4 is read)")
    language = ((data.get("metadata") or {}).get("kernelspec") or {}).get("language", "python")
    if str(language).casefold() != "python":  # Jupyter writes "python"; some tools "Python"
        raise UserError(f"{notebook}: a {language} notebook; trace runs Python")
    return cells


def _lines(cell: dict[str, object]) -> list[str]:
    source = cell.get("source", "")
    text = "".join(source) if isinstance(source, list) else str(source)
    return text.splitlines()


def _code(number: int, lines: list[str], skipped: list[Skipped]) -> list[str]:
    """A code cell's lines as Python: magic and shell lines replaced by `pass` (the line numbers stay). A cell that is
    Python already is kept as it is (a `%` opening a continued line is Python's modulo there)."""
    try:
        ast.parse("\n".join(lines))
        return lines
    except SyntaxError:
        pass
    if lines and lines[0].lstrip().startswith("%%"):
        magic = lines[0].strip()[2:].split()[0] if lines[0].strip()[2:].split() else ""
        if magic not in RUN_BODY_MAGICS:
            skipped.append(Skipped(number, 1, lines[0], f"cell magic %%{magic}: the whole cell"))
            return ["pass  # skipped: an IPython cell magic", *[""] * (len(lines) - 1)]  # blank: no marker in it counts
        skipped.append(Skipped(number, 1, lines[0], f"cell magic %%{magic}: its body runs"))
        lines = ["pass  # skipped: an IPython cell magic", *lines[1:]]
    out, at = list(lines), 0
    while at < len(lines):
        found = _MAGIC_LINE.match(lines[at])
        if found and not lines[at].lstrip().startswith("pass  # skipped"):
            kind = "a shell command" if "!" in lines[at].split("%")[0] else "an IPython magic"
            skipped.append(Skipped(number, at + 1, lines[at], kind))
            out[at] = f"{found['indent']}pass  # skipped: {kind}"
            at += 1
        else:
            at = _logical_line_end(lines, at) + 1
    return out


def _logical_line_end(lines: list[str], first: int) -> int:
    """The index of the last line of the logical line that starts at ``lines[first]``, read by Python's tokenizer: a
    string's or a bracket's continued lines are in it, so a line of theirs that starts with `%` or `!` is no magic.
    Where the tokenizer cannot read on (an unclosed string), the rest of the cell: it is kept for Python to refuse."""
    rest = iter(line + "\n" for line in lines[first:])
    depth = 0
    try:
        for token in tokenize.generate_tokens(lambda: next(rest, "")):
            if token.type == tokenize.OP and token.string in "([{":
                depth += 1
            elif token.type == tokenize.OP and token.string in ")]}":
                depth = max(depth - 1, 0)
            elif token.type == tokenize.NEWLINE or (token.type == tokenize.NL and depth == 0):
                return first + token.start[0] - 1
            elif token.type == tokenize.ENDMARKER:
                break
    except (tokenize.TokenError, SyntaxError):  # IndentationError included
        pass
    return len(lines) - 1


def to_script(notebook: Path) -> NotebookScript:
    """The notebook's code cells as one script (see the module's docstring)."""
    skipped: list[Skipped] = []
    parts = [HEADER.format(name=notebook.name), *PROLOGUE.splitlines()]
    run = 0
    for number, cell in enumerate(_cells(notebook), 1):
        if cell.get("cell_type") != "code":
            continue
        run += 1
        code = _code(number, _lines(cell), skipped)
        parts += [CELL_LINE.format(number=number), *code, ""]
    if not run:
        raise UserError(f"{notebook}: has no code cell to run")
    return NotebookScript(notebook, "\n".join(parts) + "\n", skipped, run)


def write_beside(converted: NotebookScript) -> Path:
    """Write the script beside the notebook (a hidden, unique name; the caller removes it), or in a temporary folder
    where the notebook's folder is read-only (its own modules are then not importable)."""
    folder = converted.notebook.parent
    for where in (folder, None):
        try:
            handle, name = tempfile.mkstemp(prefix=f".{converted.notebook.stem}.", suffix=".trace.py", dir=where)
        except OSError:
            continue
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(converted.text)
        return Path(name)
    raise UserError(f"{converted.notebook}: cannot write its script beside it nor in a temporary folder")


def notebook_name(source: str) -> str | None:
    """The notebook a script was converted from, read from its header line, or None for a plain script."""
    found = _HEADER.fullmatch(source.split("\n", 1)[0])
    return found["name"] if found else None


def cell_of(source: str, line: int) -> tuple[int, int, int, int] | None:
    """(cell, line in the cell, the cell's first and last script lines) of a converted notebook's script line, or
    None."""
    if notebook_name(source) is None:
        return None
    lines = source.splitlines()
    header = next((i for i in range(min(line, len(lines)), 0, -1) if _CELL.fullmatch(lines[i - 1])), None)
    if header is None or line == header:
        return None
    end = next((i - 1 for i in range(header + 1, len(lines) + 1) if _CELL.fullmatch(lines[i - 1])), len(lines))
    while end > header + 1 and not lines[end - 1].strip():
        end -= 1
    return int(_CELL.fullmatch(lines[header - 1])[1]), line - header, header + 1, end  # type: ignore[index]


def place(source: str, path: str, first: int, last: int | None = None) -> str:
    """Where lines ``first``–``last`` are, as the user sees them: "x.ipynb, cell 7, line 3" for a notebook, "x.py:12"
    for a script."""
    name, found = notebook_name(source), cell_of(source, first)
    if name is None or found is None:
        return f"{path}:{first}" if last is None or last == first else f"{path}:{first}–{last}"
    cell, line, _, _ = found
    span = f"lines {line}–{line + last - first}" if last is not None and last > first else f"line {line}"
    return f"{name}, cell {cell}, {span}"


def translate_error(error: str, script: Path, source: str) -> str:
    """A message about the script at the notebook's place: "at .x.abc.trace.py:12: ..." or "/path/.x.abc.trace.py:12:
    syntax error" -> "at x.ipynb, cell 3, line 2: ..."; the script's name alone -> the notebook's."""
    name = notebook_name(source) or script.name
    path = rf"(?:[^\s'\"]*/)?{re.escape(script.name)}"
    error = re.sub(rf"{path}:(\d+)", lambda m: place(source, script.name, int(m[1])), error)
    return re.sub(path, lambda m: name, error)


def as_notebook_capture(capture: Capture, notebook: Path) -> None:
    """After the run: the capture names the notebook (the report's title, its SHA-256) and its error says the cell."""
    import hashlib

    script = capture.script
    source = capture.sources.get(str(script)) or script.read_text(encoding="utf-8")
    capture.warnings = [type(w)(w.heading, translate_error(w, script, source)) if hasattr(w, "heading") else
                        translate_error(w, script, source) for w in capture.warnings]  # a marker never reached
    if capture.error:
        capture.error = translate_error(capture.error, script, source)
        if capture.error_at is not None and Path(capture.error_at[0]) == script:
            capture.error_location = place(source, script.name, capture.error_at[1])
        capture.error_traceback = re.sub(
            rf'File "(?:[^"]*/)?{re.escape(script.name)}", line (\d+)',
            lambda m: f'File "{place(source, script.name, int(m[1]))}"', capture.error_traceback)
    capture.script, capture.sha256 = notebook, hashlib.sha256(notebook.read_bytes()).hexdigest()


def add_notebook_page(folder: Path, notebook: Path, converted: NotebookScript) -> None:
    """The trace's own notebook page: the notebook copied into the report (notebooks/NAME.ipynb, shown by mkdocs-jupyter
    as it was saved, with what a browser would run made text: published_notebook.py) and named in the report's
    navigation (snapshots.json's extra pages) and on its overview, with the lines that were skipped."""
    from urllib.parse import quote

    import jinja2

    from transformer_trace.render import escape_text
    from transformer_trace.trace.published_notebook import TITLE, published

    (folder / "notebooks").mkdir(exist_ok=True)
    saved = json.loads(notebook.read_text(encoding="utf-8"))  # read as JSON already (_cells)
    shown = json.dumps(published(saved), indent=1, ensure_ascii=False)
    (folder / "notebooks" / notebook.name).write_text(shown + "\n", encoding="utf-8")
    page = f"notebooks/{notebook.name}"
    data_file = folder / "snapshots.json"
    data = json.loads(data_file.read_text(encoding="utf-8"))
    data["extra_pages"] = [*data.get("extra_pages", []), {"title": TITLE, "page": page}]
    data_file.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    templates = Path(__file__).resolve().parent.parent / "templates" / "classroom"
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(templates),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["code"] = lambda value: f"<code>{escape_text(value)}</code>"
    section = env.get_template("notebook_overview.md.j2").render(
        name=notebook.name, link=quote(page), cells=converted.cells, skipped=converted.skipped)
    overview = folder / "index.md"
    overview.write_text(overview.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + section, encoding="utf-8")
