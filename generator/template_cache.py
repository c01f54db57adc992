"""Compiled Jinja templates kept between processes, as Python keeps its bytecode in __pycache__.

Compiling the report templates costs a new `python -m transformer_trace build` process a few tenths of a second, every
time. Jinja's file cache stores each template's compiled code with its source's checksum (an edited template is compiled
again) behind a header naming Jinja's bytecode and Python's version; the folder is named after everything else that
shapes the compiled code: Jinja's version and the environment's syntax options. It lives in the project's cache
(``cache_root()``, where the GPT's held-out score is kept). A cache that cannot be
read or written is skipped: templates are then compiled, as without it.
"""

from __future__ import annotations

import hashlib
import os
import signal
from collections.abc import Callable
from pathlib import Path

import jinja2

from transformer_trace.processes import die_with_parent, signals_held_over_fork

PROJECT = Path(__file__).resolve().parent.parent


def cache_root() -> Path:
    """Where measurements and compiled templates are kept between runs: $TT_CACHE_DIR; else, in a clone (a
    pyproject.toml beside the package), its git-ignored .cache/transformer-trace; else, installed, the user's cache
    folder: never the installation folder (site-packages may be read-only, and is shared)."""
    if os.environ.get("TT_CACHE_DIR"):
        return Path(os.environ["TT_CACHE_DIR"])
    if (PROJECT / "pyproject.toml").is_file():
        return PROJECT / ".cache" / "transformer-trace"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "transformer-trace"

# The Environment arguments that change what a template compiles to (the others act when it runs).
SYNTAX = ("block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
          "comment_start_string", "comment_end_string", "line_statement_prefix", "line_comment_prefix",
          "trim_blocks", "lstrip_blocks", "newline_sequence", "keep_trailing_newline", "autoescape", "optimized")


class TemplateCache(jinja2.FileSystemBytecodeCache):
    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except (OSError, ValueError, EOFError):
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:  # Jinja writes beside, then renames: whole or absent, whoever else writes it (compile_ahead's child)
            os.makedirs(self.directory, exist_ok=True)
            super().dump_bytecode(bucket)
        except OSError:
            pass


def use_template_cache(env: jinja2.Environment) -> jinja2.Environment:
    """Give ``env`` a compiled-template cache for its syntax options and extensions; ``env``. Used for the report
    templates and for the MkDocs theme's (the site plugin's on_env): the same templates, compiled once."""
    options = repr([(name, getattr(env, name)) for name in SYNTAX] + sorted(env.extensions)
                   # also compiled in: async rendering, a finalize function, i18n's {% trans %} call style
                   + [env.is_async, env.finalize is not None, getattr(env, "newstyle_gettext", None)])
    key = hashlib.sha256(f"{jinja2.__version__}\0{options}".encode()).hexdigest()[:16]
    env.bytecode_cache = TemplateCache(str(cache_root() / "templates" / key))
    return env


def missing(env: jinja2.Environment) -> list[str]:
    """The templates of ``env`` whose compiled code its cache lacks (or holds for another source)."""
    cache, loader = env.bytecode_cache, env.loader
    if cache is None or loader is None:
        return []
    out = []
    for name in env.list_templates(extensions=["j2"]):
        try:
            source, filename, _ = loader.get_source(env, name)
            if cache.get_bucket(env, name, filename, source).code is None:
                out.append(name)
        except (OSError, jinja2.TemplateError):
            continue
    return out


_checked: set[int] = set()  # the environments compile_ahead has looked at (environment() makes one per process)


def compile_ahead(env: jinja2.Environment) -> Callable[[], None]:
    """On a fresh clone (templates missing from the cache), compile them in a child process forked now, while this one
    runs the models: the pages then load them compiled (one not written yet is compiled here, as without the child).
    A function that ends the child (it dies with this process too) and collects it; call it once the pages are
    written."""
    if id(env) in _checked or not hasattr(os, "fork") or (os.cpu_count() or 1) < 2:
        return lambda: None
    _checked.add(id(env))  # once per process: then its own memory holds the templates it compiled
    names = missing(env)
    if not names:
        return lambda: None
    parent = os.getpid()
    try:
        with signals_held_over_fork():
            pid = os.fork()
    except OSError:
        return lambda: None
    if pid == 0:  # the child: never returns
        code = 1
        try:
            die_with_parent(parent)
            os.nice(19)  # it takes the cores the runs leave idle
            for name in names:
                env.get_template(name)
            code = 0
        except BaseException:  # noqa: BLE001 - the parent compiles whatever is missing
            pass
        finally:
            os._exit(code)

    def end() -> None:
        try:
            if os.waitpid(pid, os.WNOHANG) == (0, 0):  # still compiling: what it has not written, the parent compiled
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        except (ChildProcessError, ProcessLookupError):
            pass

    return end
