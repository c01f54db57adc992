"""The marked files, compiled with calls to the tracer around their marked statements: the script's own interpreter
runs every other line exactly as Python compiled it, with no trace function (bootstrap.py loads this file by its path:
standard library only).

The source is parsed and only these statements are added (each located at the line it serves, so tracebacks, line
numbers and `inspect` read the file as written):

- a marked statement (with the statements sharing its lines: ``a = f(x); b = g(a)  # S05``) runs inside
  ``with __transformer_trace__.statements[n]:``, whose exit reads its values once it has run (not when it raised);
  a marked ``return x`` returns ``__transformer_trace__.returned(n, x)``, which keeps the value for that exit;
- a marked ``for`` loop's body starts with ``__transformer_trace__.loop(n)`` (the loop variable, each iteration); a
  marked ``def``'s body with ``__transformer_trace__.entry(n)`` (its arguments, on entry), after the docstring;
- each function holding a marked line, and each marked module, starts with
  ``__transformer_trace__.entered((file, first line, name))`` (which marked code ran: why a marker was not reached;
  ``entered_shared`` where it holds a line shared by several snapshots: a new frame, whose caller is read anew), after
  the docstring and ``from __future__`` imports.

``__transformer_trace__`` is the Tracer, set in each marked module's globals (not in ``builtins``: `torch.compile`
accepts only constants there). A marked `from __future__` import is never wrapped (nothing may precede one): its
value is taken once the module's docstring and future imports have run.
Modules are compiled so as they are imported (SourceFileLoader.get_code, patched for the marked files only; their
own cached bytecode is neither read nor written), the script by bootstrap.py itself. The compiled code is kept in a
cache folder of the generator's, under a key of the file's bytes, its path, its markers, Python's version and this
file: a second trace of an unchanged file compiles nothing, as a plain run reads its cached bytecode.
"""

import __future__
import ast
import bisect
import hashlib
import marshal
import os
import re
import sys

from . import protocol

HOOK = "__transformer_trace__"


class Plan:
    """What is marked in one file, by line: statement spans (first, last) -> group, `def` lines -> group (entry),
    `for` lines -> group (each iteration); ``file``: the path the markers name it by."""

    def __init__(self, file, statements, entries, loops, shared=()):
        self.file = file
        self.statements = statements
        self.entries = entries
        self.loops = loops
        self.shared = sorted(shared)  # the first lines of the statements shared by several snapshots
        self.lines = sorted({first for first, _ in statements} | set(entries) | set(loops))
        self._key = None

    def marks(self, node, lines=None):
        """Whether a marked line (of ``lines``, else any) lies within the node's lines."""
        return any(node.lineno <= line <= node.end_lineno for line in (self.lines if lines is None else lines))


    def key(self):
        """What the compiled code depends on besides the source: the markers' places, their groups, this file."""
        if self._key is None:
            self._key = repr((sys.version, _OWN, sorted(self.statements.items()), sorted(self.entries.items()),
                              sorted(self.loops.items()), self.shared, self.file))
        return self._key


def compile_marked(source, filename, plan, cache=None):
    """The code of a marked file, its marked statements wrapped (see the module's doc); ``source``: its bytes (a PEP
    263 coding declaration honoured, as Python's own import does); ``cache``: the folder it is kept in, or None.
    A notebook's script: a tuple of codes, one a cell (``_cells``); ``plan`` None: nothing of it is marked."""
    path = None
    if cache and plan is not None:
        key = hashlib.sha256(f"{plan.key()}\0{filename}\0".encode() + source).hexdigest()
        path = os.path.join(cache, key + ".code")
        try:
            with open(path, "rb") as file:
                return marshal.loads(file.read())
        except (OSError, ValueError, EOFError, TypeError):
            pass  # not compiled yet (or a damaged entry): compiled anew
    starts = _cell_starts(source)
    if plan is None and starts is None:  # an unmarked script: compiled from its bytes as python does, no tree made
        return compile(source, filename, "exec", dont_inherit=True)
    tree = ast.parse(source, filename)
    deferred = []  # the groups of marked `from __future__` imports, which no statement may precede
    if plan is not None:
        tree.body = _body(tree.body, plan, deferred)
    if plan is not None and plan.lines:
        at = _after_preamble(tree.body, module=True)
        anchor = tree.body[at] if at < len(tree.body) else (tree.body[-1] if tree.body else None)
        tree.body[at:at] = [_call("entered", (plan.file, 1, "<module>"), anchor),
                            *(_wrapped(group, [_located(ast.Pass(), anchor)], anchor) for group in deferred)]
    code = compile(tree, filename, "exec", dont_inherit=True) if starts is None else _cells(tree, filename, starts)
    if path is not None:
        try:
            os.makedirs(cache, exist_ok=True)
            with open(path + f".{os.getpid()}.part", "wb") as file:
                file.write(marshal.dumps(code))
            os.replace(path + f".{os.getpid()}.part", path)
            _prune(cache)
        except OSError:
            pass  # a read-only cache: compiled again next time
    return code


_NOTEBOOK = protocol.NOTEBOOK_HEADER.split("{")[0].encode()
_CELL = re.compile(re.escape(protocol.CELL_LINE).replace(re.escape("{number}"), r"\d+").encode() + rb"\r?$", re.M)


def _cell_starts(source):
    """The lines that start a notebook's cells (the lines naming them), or None where ``source`` is no notebook's."""
    if not source.startswith(_NOTEBOOK):
        return None
    return [source.count(b"\n", 0, found.start()) + 1 for found in _CELL.finditer(source)]


# Every `from __future__` feature's compiler flag: what a cell's code object carries when the cell imported one.
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag


def _cells(tree, filename, starts):
    """A notebook's script as IPython runs a notebook: each cell compiled on its own (what precedes the first cell, our
    prologue, too), a top-level `await` allowed; the code of a cell holding one is a coroutine (CO_COROUTINE), which
    bootstrap.py runs in an event loop. A `from __future__` import holds for its cell and every later one, as IPython's
    compiler (codeop's) keeps the flags a compiled cell set."""
    parts = [[] for _ in range(len(starts) + 1)]
    for node in tree.body:  # a wrapped statement is located at the line of the statement it wraps: in its cell
        parts[bisect.bisect_right(starts, node.lineno)].append(node)
    codes, carried = [], 0
    for part in parts:
        if part:
            codes.append(compile(ast.Module(body=part, type_ignores=[]), filename, "exec", dont_inherit=True,
                                 flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT | carried))
            carried |= codes[-1].co_flags & _FUTURE_FLAGS
    return tuple(codes)


MOST_KEPT = 256  # compiled files kept: each edit of a marked file adds one


def _prune(cache):
    """The oldest compiled files past MOST_KEPT removed (as a file is compiled anew: rarely)."""
    entries = [os.path.join(cache, name) for name in os.listdir(cache) if name.endswith(".code")]
    if len(entries) > MOST_KEPT:
        entries.sort(key=os.path.getmtime)
        for old in entries[:-MOST_KEPT]:
            try:
                os.remove(old)
            except OSError:
                pass  # removed by another trace meanwhile


def _own_source():
    try:
        with open(__file__, "rb") as file:
            return hashlib.sha256(file.read()).hexdigest()
    except OSError:
        return ""


_OWN = _own_source()  # a change to this file compiles every marked file anew


_COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor, ast.While, ast.If, ast.With,
             ast.AsyncWith, ast.Try, ast.Match) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())


def _body(statements, plan, deferred=None):
    """A statement list with its marked statements wrapped, and the bodies of its compound statements rewritten;
    ``deferred``: (the module's own list) where a marked `from __future__` import's group goes, taken once the
    module's preamble has run (nothing may come before such an import)."""
    out, i, wrapped, futures = [], 0, set(), []
    while i < len(statements):
        node = statements[i]
        span = _span(node, plan) if _wrappable(node) else None
        if span is not None:
            first, last = span
            j = i
            while (j < len(statements) and _wrappable(statements[j])
                   and first <= statements[j].lineno and statements[j].end_lineno <= last):
                j += 1
            group = plan.statements[span]
            wrapped.add(group)
            out.append(_wrapped(group, [_returning(s, group) for s in statements[i:j]], node))
            i = j
            continue
        if deferred is not None and _is_future(node) and _span(node, plan) is not None:
            futures.append(plan.statements[_span(node, plan)])
        _rewrite_compound(node, plan)
        out.append(node)
        i += 1
    if deferred is not None:  # a future import sharing its marked line with a statement is taken with that one
        deferred += [group for group in futures if group not in wrapped]
    return out


def _wrappable(node):
    return not isinstance(node, _COMPOUND) and not _is_future(node)


def _is_future(node):
    return isinstance(node, ast.ImportFrom) and node.module == "__future__"


def _wrapped(group, statements, anchor):
    """``with __transformer_trace__.statements[group]: statements``, at the anchor's line."""
    hook = ast.Subscript(ast.Attribute(ast.Name(HOOK, ast.Load()), "statements", ast.Load()), ast.Constant(group),
                         ast.Load())
    return _located(ast.With([ast.withitem(_located(hook, anchor))], statements), anchor)


def _span(node, plan):
    """The marked span (first, last) a simple statement lies within, or None."""
    for (first, last) in plan.statements:
        if first <= node.lineno and node.end_lineno <= last:
            return first, last
    return None


def _returning(node, group):
    if isinstance(node, ast.Return) and node.value is not None:
        value = node.value
        call = ast.Call(ast.Attribute(ast.Name(HOOK, ast.Load()), "returned", ast.Load()), [ast.Constant(group)], [])
        node.value = _located(call, value)
        call.args.append(value)
    return node


def _rewrite_compound(node, plan):
    for field in ("body", "orelse", "finalbody"):
        if isinstance(getattr(node, field, None), list):
            setattr(node, field, _body(getattr(node, field), plan))
    for handler in getattr(node, "handlers", ()):
        handler.body = _body(handler.body, plan)
    for case in getattr(node, "cases", ()):
        case.body = _body(case.body, plan)
        if case.pattern.lineno in plan.loops:  # a marked `case` line: the names its pattern bound, as its body begins
            case.body.insert(0, _call("loop", plan.loops[case.pattern.lineno], case.body[0]))
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and plan.marks(node):
        at = _after_preamble(node.body, module=False)
        anchor = node.body[at] if at < len(node.body) else node.body[-1]
        method = "entered_shared" if plan.marks(node, plan.shared) else "entered"  # a new frame of a shared line's
        added = [_call(method, (plan.file, _first_line(node), node.name), anchor)]
        if node.lineno in plan.entries:
            added.append(_call("entry", plan.entries[node.lineno], anchor))
        node.body[at:at] = added
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith)) \
            and node.lineno in plan.loops:  # its header's names (markers.BINDING_HEADERS), as its body begins
        node.body.insert(0, _call("loop", plan.loops[node.lineno], node.body[0]))


def _first_line(node):
    """A function's code's first line, as its code object's co_firstlineno: its first decorator's."""
    return node.decorator_list[0].lineno if node.decorator_list else node.lineno


def _after_preamble(body, module):
    """Where added statements go: after a docstring, and (in a module) its `from __future__` imports."""
    at = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        at = 1
    while module and at < len(body) and _is_future(body[at]):
        at += 1
    return at


def _call(method, argument, anchor):
    """``__transformer_trace__.method(argument)`` as a statement, at the anchor's line."""
    call = ast.Call(ast.Attribute(ast.Name(HOOK, ast.Load()), method, ast.Load()), [ast.Constant(argument)], [])
    return _located(ast.Expr(call), anchor)


def _located(new, anchor):
    """The new nodes (not the statements they wrap, which keep their own) placed at the anchor's first line."""
    line, column = (anchor.lineno, anchor.col_offset) if anchor is not None else (1, 0)
    todo = [new]
    while todo:
        node = todo.pop()
        if "lineno" in node._attributes and getattr(node, "lineno", None) is None:
            node.lineno, node.end_lineno, node.col_offset, node.end_col_offset = line, line, column, column
        todo += [child for child in ast.iter_child_nodes(node) if not isinstance(child, ast.stmt)]
    return new


def patch_loader(plans, hook, cache=None):
    """Compile the marked modules with their statements wrapped as they are imported (``plans``: real path -> Plan),
    ``hook`` set in their globals: SourceFileLoader's exec_module and get_code, the steps every source import goes
    through (`import`, importlib's spec_from_file_location, reload), for those files only; other files load as
    before. The function that undoes it."""
    from importlib.machinery import SourceFileLoader

    original_code, original_exec = SourceFileLoader.get_code, SourceFileLoader.exec_module
    names = {os.path.basename(path) for path in plans}
    # a module's path -> its Plan or None, looked up once (a real path costs an lstat per folder); a marked file's
    # own path (the markers' name for it, whose real path is its key) needs none
    known = {plan.file: plan for plan in plans.values()}

    def plan_of(path):
        plan = known.get(path, known)
        if plan is known:
            plan = known[path] = plans.get(os.path.realpath(path)) if path.rpartition(os.sep)[2] in names else None
        return plan

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        plan = plan_of(path)
        if plan is None:
            return original_code(self, fullname)
        return compile_marked(self.get_data(path), path, plan, cache)  # never from, nor into, its own .pyc

    def exec_module(self, module):
        if plan_of(self.path) is not None:
            module.__dict__[HOOK] = hook
        return original_exec(self, module)

    SourceFileLoader.get_code, SourceFileLoader.exec_module = get_code, exec_module

    def undo():
        SourceFileLoader.get_code, SourceFileLoader.exec_module = original_code, original_exec

    return undo
