"""Errors that are the user's to fix: reported in one line, exit code 2, no traceback."""

from collections.abc import Iterator
from contextlib import contextmanager


class UserError(Exception):
    """A problem with the input or the environment, phrased as what to do about it."""

    # the report whose input it is, when one report's work raised it (set by ``about_report``)
    report: str | None = None


@contextmanager
def about_report(key: str) -> Iterator[None]:
    """A UserError raised inside names report ``key`` as its cause, so that the MkDocs plugin can say which report's
    options in mkdocs.yml to fix (the CLI's message is unchanged)."""
    try:
        yield
    except UserError as exc:
        if exc.report is None:
            exc.report = key
        raise


def file_error(exc: OSError) -> UserError | None:
    """A failed file operation on a path the user gave (too long a name, a link loop, no permission): their problem to
    fix, in one line with the path shortened; None for an OSError naming no file (a bug or the machine's)."""
    if exc.filename is None:
        return None
    name = str(exc.filename)
    if len(name) > 100:
        name = f"{name[:48]}...{name[-48:]} ({len(name)} characters)"
    return UserError(f"cannot use {name}: {exc.strerror or type(exc).__name__}")


def one_line(message: str) -> str:
    """``message`` on one line, without the "error: " the command line puts before it."""
    line = " ".join(message.split())
    return line[len("error: "):] if line.startswith("error: ") else line
