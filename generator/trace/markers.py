"""Find the breakpoint comments in a user's script and the statement each one marks.

The forms students write (see the seed reports):

- ``# BREAKPOINT S13`` — ViT numbering (S01–S26),
- ``# Snapshot #13`` / ``# Snapshot 13`` / ``# SNAPSHOT #13`` — encoder–decoder numbering (#1–#43),
- ``# BREAKPOINT G05`` — GPT numbering (G01–G32),
- ``# trace: any_name`` — a point of the user's own, outside any catalogue (its values are in the report's data/);
- ``# SNAPSHOT #7 or #21 or #30`` — a line shared by several steps (one attention function for the encoder, the masked
  and the cross-attention): its hits are told apart by the line of the user's code that called it, the callers taken
  in the order they first call; ``# BREAKPOINT S16 or S19`` the same with a letter numbering (one residual helper for
  both sublayers), never its first snapshot alone with the rest read as a title.

A marker on a statement's line (multi-line statements included) marks that statement; a marker alone on a comment
line marks the statement just before it, as a debugger breakpoint there stops once that statement has run, unless a
blank line separates them and a statement follows the comment directly (a comment used as a heading marks that one). The
captured variable is the one the statement assigns (a ``return`` statement: the value it returns), or the name written
right after the marker (``# BREAKPOINT S14 attn_ctx``, ``# Snapshot #14: res1_a, res1_b``).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from transformer_trace.errors import UserError

RETURN_VALUE = "return_value"  # the name a marked `return` statement's value is captured under

_NAME = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:\[[^\]#]*\])?"  # a subscript: "bias[:, :, :T, :T]"
_NAMES = rf"(?P<names>{_NAME}(?:\s*,\s*{_NAME})*)"
# A name list only counts when nothing but a title separator or the end follows it ("- Raw input" is a title).
_AFTER = rf"(?:\s*[:=]?\s*{_NAMES}(?=\s*(?:$|[-–—;#(])))?"
_BREAKPOINT = re.compile(rf"\bBREAKPOINT\s+(?P<letter>[A-Z])\s*(?P<number>\d+)"
                         rf"(?P<more>(?:\s*(?:,|and|&|or|/)\s*(?:BREAKPOINT\s+)?[A-Z]\s*\d+)*){_AFTER}", re.I)
_SNAPSHOT = re.compile(rf"\bSNAPSHOT\s*#?\s*(?P<number>\d+)(?P<more>(?:\s*(?:or|/|,|and|&)\s*#?\s*\d+)*){_AFTER}", re.I)
# A comment of the user's may follow (`# trace: f  # noqa: E731`), as it may follow a catalogue marker.
_CUSTOM = re.compile(rf"^\s*(?P<marker>#\s*trace\s*:\s*(?P<point>[A-Za-z_]\w*)"
                     rf"(?:\s+(?P<names>{_NAME}(?:\s*,\s*{_NAME})*))?)\s*(?:#.*)?$")


@dataclass(frozen=True)
class Marker:
    """One marked value: ``numbering`` a report's key (``number`` set) or "custom" (``point`` set)."""

    file: str
    line: int  # the marker comment's line
    numbering: str
    number: int | None
    point: str | None
    names: tuple[str, ...]  # variables to read once the statement ran; names[0] is the main one
    first: int  # the marked statement's lines
    last: int
    text: str  # the marker as written, for messages
    # "#7 or #21 or #30": one line, a snapshot per caller, in the order they first call
    alternatives: tuple[int, ...] = ()
    # read instead of ``names`` when one of those does not exist (a title word; see with_catalogue_names)
    fallback: tuple[str, ...] = ()
    shared: bool = False  # one of several markers on a line that assigns fewer names than it has markers
    entry_line: int = 0  # a marker on a `def` line: the function's code starts here, its arguments are read on entry
    loop_body: tuple[int, int] | None = None  # a marker on a `for` line: a hit each time the body starts

    @property
    def key(self) -> str:
        return self.point if self.point else f"{self.numbering}:{self.number}"


def _comments(source: str) -> list[tuple[int, str, bool]]:
    """(line, comment text, alone on its line) for every comment of the file."""
    found = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                found.append((tok.start[0], tok.string, not tok.line[: tok.start[1]].strip()))
    except (tokenize.TokenError, SyntaxError):  # reported by ast.parse with a line number
        pass
    return found


def _simple_statements(tree: ast.AST) -> list[ast.stmt]:
    """The statements a marker can mark: not compound ones, and not a bare string (a docstring holds no value)."""
    compound = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor, ast.While, ast.If,
                ast.With, ast.AsyncWith, ast.Try, ast.Match)
    return [node for node in ast.walk(tree) if isinstance(node, ast.stmt) and not isinstance(node, compound)
            and not _is_string(node)]


def _last(node: ast.stmt) -> int:
    """A statement's last line (always set on a parsed statement; typeshed allows None)."""
    return node.end_lineno if node.end_lineno is not None else node.lineno


def _is_string(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _strings(tree: ast.AST) -> list[tuple[int, int]]:
    """The lines of each bare string statement (docstrings): a marker there marks the statement after it."""
    return [(node.lineno, _last(node)) for node in ast.walk(tree)
            if isinstance(node, ast.stmt) and _is_string(node)]


def _target_names(target: ast.expr) -> list[str] | None:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Attribute):
        if isinstance(target.value, ast.Subscript):
            return None  # `x[0].weight = w`: no name holds what it changed
        inner = _target_names(target.value)
        return [f"{inner[0]}.{target.attr}"] if inner and len(inner) == 1 else None
    if isinstance(target, ast.Subscript):  # `dots[idx] = value` changes `dots` in place: the variable, once it ran
        return _target_names(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        names = []
        for element in target.elts:
            part = _target_names(element.value if isinstance(element, ast.Starred) else element)
            if part is None:
                return None
            names += part
        return names
    return None  # a call's result subscripted (`f()[0] = v`), a starred slice: nothing to name


def assigned_names(statement: ast.stmt) -> list[str]:
    if isinstance(statement, ast.Assign):
        names: list[str] = []
        for target in statement.targets:
            names += _target_names(target) or []
        return list(dict.fromkeys(names))  # `x[0], x[1] = a, b`: x once
    if isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        return _target_names(statement.target) or []
    return []


def read_source(path: Path) -> str:
    """A Python file's text as Python reads it: in the encoding its PEP 263 declaration or BOM names, else UTF-8."""
    with path.open("rb") as file:
        data = file.read()
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # an unknown encoding, or a declaration that contradicts the BOM
        raise UserError(f"{path}: {exc.msg if hasattr(exc, 'msg') else exc}") from None
    try:
        return data.decode(encoding).removeprefix("\ufeff")
    except (UnicodeDecodeError, LookupError):
        raise UserError(f"{path}: not text in its encoding ({encoding}); declare the file's encoding in its first two "
                        f"lines (# -*- coding: latin-1 -*-) or save it as UTF-8") from None


def parse_script(path: Path) -> tuple[str, ast.Module]:
    source = read_source(path)
    try:
        return source, ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise UserError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None


def _statement_for_comment_line(statements: list[ast.stmt], lines: list[str], line: int) -> ast.stmt | None:
    """The statement a marker alone on its line marks: the one just above it, as a debugger breakpoint there stops once
    that statement has run (the ViT seed's style); but when a blank line separates it from that one and the next
    statement follows it directly, that next one (the encoder–decoder seed's comment-as-heading style). Other comment
    lines in between count as part of the marker's block."""
    def adjacent(step: int) -> int | None:  # the first code line above (-1) or below (+1), if no blank line comes first
        i = line + step
        while 1 <= i <= len(lines):
            text = lines[i - 1].strip()
            if not text:
                return None
            if not text.startswith("#"):
                return i
            i += step
        return None

    around = [s for s in statements if s.lineno < line < _last(s)]  # a comment line inside a bracketed statement
    if around:
        return min(around, key=lambda s: _last(s) - s.lineno)
    above = [s for s in statements if _last(s) < line]
    # the last statement to end above it (of `a = f(x); b = g(a)`, the one that runs last)
    nearest_above = max(above, key=lambda s: (_last(s), -s.lineno, s.col_offset), default=None)
    above_line, below_line = adjacent(-1), adjacent(+1)
    if above_line is None and below_line is not None:
        below = [s for s in statements if s.lineno == below_line]
        if below:
            return min(below, key=lambda s: _last(s) - s.lineno)
    if above_line is not None and (nearest_above is None or _last(nearest_above) != above_line):
        # right under a `def`/`for`/`if` line, a docstring or a decorator: the marker heads the block's first statement
        return _first_after(statements, line)
    return nearest_above


def _first_after(statements: list[ast.stmt], line: int) -> ast.stmt | None:
    after = [s for s in statements if s.lineno > line]
    return min(after, key=lambda s: (s.lineno, _last(s) - s.lineno), default=None)


def find_markers(path: Path, numberings: Mapping[tuple[str, str], str]) -> list[Marker]:
    """Every marker of the file, in line order, with the statement it marks and the names to read; ``numberings``:
    (keyword, letter) -> the report key a numbered marker of that form belongs to
    (transformer_trace.trace.numberings)."""
    source, tree = parse_script(path)
    statements = _simple_statements(tree)
    headers, strings = _headers(tree), _strings(tree)
    markers = []
    for line, comment, alone in _comments(source):
        found = _parse_comment(comment, numberings)
        if not found and re.match(r"\s*#\s*trace\s*:", comment):  # "# trace: h[0]": written as a marker, not one
            raise UserError(f"{path.name}:{line}: {comment.strip()!r}: a point is '# trace: name', then what to read "
                            f"if not the variable of that name ('# trace: name h[0]')")
        if not found:
            continue
        if alone:
            statement = _statement_for_comment_line(statements, source.splitlines(), line)
        elif docstring := next((s for s in strings if s[0] <= line <= s[1]), None):
            statement = _first_after(statements, docstring[1])  # '"""Doc."""  # S05': the statement after it
        else:
            spanning = [s for s in statements if s.lineno <= line <= _last(s)]  # of several on the line: the last
            statement = min(spanning, key=lambda s: (_last(s) - s.lineno, -s.col_offset), default=None)
            header = _header_at(headers, line) if statement is None else None
            if header is not None:  # "def f(x):  # S05" (its arguments at entry), "for x in xs:  # S05" (each time)
                markers += _header_markers(path, line, header, found)
                continue
        if statement is None:
            raise UserError(f"{path.name}:{line}: {found[0][3]!r} marks no statement (put it on, or right after, the "
                            "line that computes the value)")
        markers += _statement_markers(path, line, statement, found)
    return markers


def _statement_markers(path: Path, line: int, statement: ast.stmt, found: list) -> list[Marker]:
    assigned = assigned_names(statement)
    kept = [name for name in assigned if name != "_"] or assigned  # "logits, _ = model(x)": `_` is thrown away
    returns = isinstance(statement, ast.Return) and statement.value is not None
    markers = []
    for numbering, number, point, text, names, alternatives in found:
        fallback: tuple[str, ...] = ()
        if names:  # a word after the marker that is no variable once the line ran is a title: the line's own value then
            chosen, fallback = names, tuple(kept) or ((RETURN_VALUE,) if returns else ())
        elif len(found) > 1 and len(assigned) == len(found):  # "a, b, c = f(x)  # S02, S03, S04": one name each
            chosen = (assigned[[f[1] for f in found].index(number)],)
        elif len(found) > 1 and len(assigned) > 1:
            raise UserError(f"{path}:{line}: {len(found)} markers on a line that assigns {len(assigned)} names "
                            f"({', '.join(assigned)}); write the name after each marker")
        elif assigned and len(found) > 1:  # the seed's "x = ln1(res1_a + res1_b)  # SNAPSHOT #14 ...; SNAPSHOT #15"
            markers.append(Marker(str(path), line, numbering, number, point, tuple(assigned), statement.lineno,
                                  _last(statement), text, alternatives, shared=True))
            continue
        elif assigned:
            chosen = tuple(kept)
        elif returns:  # "return x @ w  # Snapshot #7"
            chosen = (RETURN_VALUE,)
        elif numbering == "custom":  # "print(x)  # trace: x": the point's name is the variable
            chosen = (point,)
        else:
            raise UserError(f"{path}:{line}: {text!r}: line {statement.lineno} assigns no variable; write the name "
                            f"after the marker, e.g. '{text} x'")
        markers.append(Marker(str(path), line, numbering, number, point, chosen, statement.lineno, _last(statement),
                              text, alternatives, fallback))
    return markers


# read as their body begins; a `case` line: the names its pattern binds
BINDING_HEADERS = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.match_case)
BindingHeader = ast.For | ast.AsyncFor | ast.While | ast.If | ast.With | ast.AsyncWith | ast.match_case
# (first line, last line of the header, the def or the statement whose header assigns, whether a def is a method whose
# first parameter is the instance or the class, whatever it is named: `def forward(s, x):`)
Header = tuple[int, int, "ast.FunctionDef | ast.AsyncFunctionDef | BindingHeader", bool]
PLAIN_FUNCTION_DECORATORS = ("staticmethod",)  # a def in a class body that takes no instance first


def _headers(tree: ast.AST) -> list[Header]:
    """Each `def` (decorators included) and `for`, `while`, `if`, `with` and `case` header's lines: a marker there
    marks the statement."""
    methods = {id(node) for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef) for node in cls.body
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
               and not any(_decorator_name(d) in PLAIN_FUNCTION_DECORATORS for d in node.decorator_list)}
    found: list[Header] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, *BINDING_HEADERS)):
            decorators = node.decorator_list if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
            first = decorators[0].lineno if decorators else header_line(node)
            found.append((first, max(header_line(node), node.body[0].lineno - 1), node, id(node) in methods))
    return found


def header_line(node: ast.AST) -> int:
    """A statement's first line; a `case`'s (which has no line of its own): its pattern's."""
    return node.pattern.lineno if isinstance(node, ast.match_case) else node.lineno  # type: ignore[attr-defined]


def _decorator_name(decorator: ast.expr) -> str:
    """`staticmethod` of `@staticmethod`, `@builtins.staticmethod` or `@staticmethod()`."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""


def _header_at(headers: list[Header], line: int) -> Header | None:
    return min((h for h in headers if h[0] <= line <= h[1]), key=lambda h: h[1] - h[0], default=None)


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> list[str]:
    """The arguments a `def`-line marker reads: a method's first (the instance or the class, `self`, `s` or `cls`) is
    not a value of the model's."""
    arguments = node.args
    names = [a.arg for a in [*arguments.posonlyargs, *arguments.args]]
    names = names[1:] if method or names[:1] in (["self"], ["cls"]) else names
    names += [a.arg for a in (arguments.vararg, *arguments.kwonlyargs, arguments.kwarg) if a is not None]
    return names


def _bound_by_header(node: BindingHeader) -> list[str]:
    """The names a `for`, `while`, `if`, `with` or `case` header assigns: the loop variable, a walrus's target
    (`if (n := ...):`), the `as` names (`with open(...) as fh:`), the names a `case` pattern binds."""
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return _target_names(node.target) or []
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [name for item in node.items if item.optional_vars is not None
                for name in _target_names(item.optional_vars) or []]
    if isinstance(node, ast.match_case):  # `case ("scale", k):`, `case [first, *rest]:`, `case {"a": a, **more}:`
        bound = [name for part in ast.walk(node.pattern) for name in (
            (part.name,) if isinstance(part, (ast.MatchAs, ast.MatchStar)) else
            (part.rest,) if isinstance(part, ast.MatchMapping) else ()) if name]
        walruses = ast.walk(node.guard) if node.guard is not None else ()
        return list(dict.fromkeys([*bound, *(w.target.id for w in walruses if isinstance(w, ast.NamedExpr))]))
    return [walrus.target.id for walrus in ast.walk(node.test) if isinstance(walrus, ast.NamedExpr)]


def _header_markers(path: Path, line: int, header: Header, found: list) -> list[Marker]:
    """A marker on a `def` line reads the function's arguments as it is entered; on a `for`, `while`, `if` or `with`
    line, what its header assigns (the loop variable, a walrus's target, the `as` names) as its body begins, a hit
    each time."""
    first, last, node, method = header
    loop = isinstance(node, BINDING_HEADERS)
    available = _bound_by_header(node) if isinstance(node, BINDING_HEADERS) else _parameters(node, method)
    markers = []
    for index, (numbering, number, point, text, names, alternatives) in enumerate(found):
        chosen = names or (tuple(available) if len(found) == 1 else
                           (available[index],) if len(available) == len(found) else ())
        if not chosen:
            raise UserError(f"{path}:{line}: {text!r}: write the name to read after the marker, e.g. '{text} x'")
        body = (node.body[0].lineno, _last(node.body[-1])) if loop else None
        markers.append(Marker(str(path), line, numbering, number, point, chosen, header_line(node), last, text,
                              alternatives, entry_line=0 if loop else first, loop_body=body))
    return markers


def _parse_comment(comment: str, numberings: Mapping[tuple[str, str], str]
                   ) -> list[tuple[str, int | None, str | None, str, tuple[str, ...], tuple[int, ...]]]:
    """(numbering, number, point, marker text, names, alternatives) for each marker in one comment; "S09, S10, S11" is
    three markers, "#7 or #21 or #30" one marker whose snapshot depends on the caller."""
    if custom := _CUSTOM.match(comment):
        names = split_names(custom.group("names")) if custom.group("names") else ()
        return [("custom", None, custom.group("point"), custom.group("marker").strip(), names, ())]
    found: list[tuple[str, int | None, str | None, str, tuple[str, ...], tuple[int, ...]]] = []
    for pattern in (_BREAKPOINT, _SNAPSHOT):
        for match in pattern.finditer(comment):
            letter = match.group("letter").upper() if pattern is _BREAKPOINT else "#"
            numbering = numberings.get(("BREAKPOINT" if pattern is _BREAKPOINT else "SNAPSHOT", letter))
            if numbering is None:
                continue  # a letter no report numbers with
            numbers = [int(match.group("number"))] + [int(n) for n in re.findall(r"\d+", match.group("more"))]
            names = split_names(match.group("names")) if match.group("names") else ()
            if re.search(r"\bor\b|/", match.group("more")):  # the seed's "#7 or #21 or #30 (depending on caller)"
                found += _shared_groups(numbering, match, names)
                continue
            if names and len(numbers) > 1 and len(names) != len(numbers):
                raise UserError(f"{match.group(0).strip()!r}: {len(numbers)} snapshots but {len(names)} names; "
                                f"give one name each")
            for i, number in enumerate(numbers):
                chosen = (names[i],) if names and len(numbers) > 1 else names
                found.append((numbering, number, None, match.group(0).strip(), chosen, ()))
    return found


def _shared_groups(numbering: str, match: re.Match, names: tuple[str, ...]
                   ) -> list[tuple[str, int | None, str | None, str, tuple[str, ...], tuple[int, ...]]]:
    """A marker of shared lines: "#7 or #21 or #30" one, "#7 or #21, #8 or #22, #9 or #23" three (one line assigning
    q, k and v for two attentions), split at the commas, each group's snapshot told by its caller; names, where
    given, one per group."""
    text = match.group(0).strip()
    groups = [[int(n) for n in re.findall(r"\d+", group)]
              for group in re.split(r",|\band\b|&", match.group("number") + match.group("more"))]
    if len(groups) == 1:
        return [(numbering, groups[0][0], None, text, names, tuple(groups[0]))]
    if names and len(names) != len(groups):
        raise UserError(f"{text!r}: {len(groups)} markers but {len(names)} names; give one name each")
    return [(numbering, group[0], None, text, (names[i],) if names else (), tuple(group) if len(group) > 1 else ())
            for i, group in enumerate(groups)]


def split_names(text: str) -> tuple[str, ...]:
    """"a, b", "bias[:, :, :T, :T], x": the names, split at the commas outside brackets; a subscript may only slice
    with names, numbers and arithmetic (it is evaluated in the script's frame)."""
    names, depth, start = [], 0, 0
    for i, char in enumerate(text + ","):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            names.append(text[start:i].strip())
            start = i + 1
    for name in names:
        if "[" in name:
            _check_subscript(name)
    return tuple(names)


_SAFE_NODES = (ast.Expression, ast.Subscript, ast.Slice, ast.Tuple, ast.Name, ast.Attribute, ast.Constant, ast.UnaryOp,
               ast.BinOp, ast.Load, ast.USub, ast.UAdd, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)


def _check_subscript(name: str) -> None:
    try:
        tree = ast.parse(name, mode="eval")
    except SyntaxError:
        raise UserError(f"{name!r} after a marker: not a variable or a slice of one") from None
    if not all(isinstance(node, _SAFE_NODES) for node in ast.walk(tree)):
        raise UserError(f"{name!r} after a marker: a slice may use names, numbers and + - * // only")


def with_catalogue_names(markers: list[Marker], variables: dict[int, str]) -> list[Marker]:
    """Markers sharing a line that assigns one name ("x = ln1(res1_a + res1_b)  # SNAPSHOT #14 ...; SNAPSHOT #15"): each
    reads the catalogue's variable names for its snapshot ("res1_a, res1_b") when they all exist once the line has run,
    else what the line assigns."""
    from dataclasses import replace

    out = []
    for marker in markers:
        variable = variables.get(marker.number, "") if marker.number is not None else ""
        names = tuple(n.strip() for n in variable.split(","))
        if marker.shared and names and all(re.fullmatch(r"[A-Za-z_]\w*", n) for n in names):
            marker = replace(marker, names=names, fallback=marker.names)
        out.append(marker)
    return out


def scan(paths: list[Path], numberings: Mapping[tuple[str, str], str]) -> list[Marker]:
    """The markers of the script (paths[0]) and of the modules beside it that it may import. A module that does not
    parse and holds no marker is left out in silence: Python reads it only if it is imported (Python 2 code under
    `if False:` must not stop a script that runs)."""
    markers = []
    for index, path in enumerate(paths):
        if index and not _parses(path) and not _has_marker(path, numberings):
            continue
        markers += find_markers(path, numberings)
    return markers


def _parses(path: Path) -> bool:
    try:
        ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError, OSError):
        return False
    return True


def _has_marker(path: Path, numberings: Mapping[tuple[str, str], str]) -> bool:
    try:
        source = path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return False
    return any(_parse_comment(comment, numberings) for _, comment, _ in _comments(source))
