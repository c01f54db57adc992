"""Compiled Jinja templates kept between processes, as Python keeps its bytecode in __pycache__.

Compiling the report templates costs a new `python -m generator build` process a few tenths of a second, every time.
Jinja's file cache stores each template's compiled code with its source's checksum (an edited template is compiled
again) behind a header naming Jinja's bytecode and Python's version; the folder is named after everything else that
shapes the compiled code: Jinja's version and the environment's syntax options. It lives in the project's cache
(``$TT_CACHE_DIR``, else .cache/transformer-trace, where the GPT's held-out score is kept). A cache that cannot be
read or written is skipped: templates are then compiled, as without it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import jinja2

PROJECT = Path(__file__).resolve().parent.parent

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
        try:
            os.makedirs(self.directory, exist_ok=True)
            super().dump_bytecode(bucket)
        except OSError:
            pass


def use_template_cache(env: jinja2.Environment) -> jinja2.Environment:
    """Give ``env`` a compiled-template cache for its syntax options and extensions; ``env``."""
    options = repr([(name, getattr(env, name)) for name in SYNTAX] + sorted(env.extensions))
    key = hashlib.sha256(f"{jinja2.__version__}\0{options}".encode()).hexdigest()[:16]
    root = Path(os.environ.get("TT_CACHE_DIR") or PROJECT / ".cache" / "transformer-trace")  # as generator/reports/gpt/training.py
    env.bytecode_cache = TemplateCache(str(root / "templates" / key))
    return env
