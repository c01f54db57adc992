"""The MkDocs site a command works on, found as `mkdocs` finds it: the current folder's mkdocs.yml (or mkdocs.yaml),
else the one `--config` names; reports are written into its `docs_dir` unless `--out`/`--docs` says otherwise.

Installed from a wheel, the package's own folder is site-packages: nothing here ever points a command at it.
Torch-free: `transformer-trace new` and a refused command import nothing of the models.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, BinaryIO

from transformer_trace.errors import UserError

CONFIG_NAMES = ("mkdocs.yml", "mkdocs.yaml")  # MkDocs' own search order
# The commands that work on a site, and the attribute holding their docs folder.
DOCS_OPTION = {"build": "out", "trace": "out", "pdf": "out", "serve": "docs"}
# Commands that can write into a folder given with --out without any mkdocs.yml (the reports' defaults apply).
_WITHOUT_CONFIG = {"build", "trace"}


def no_config_message(folder: Path) -> str:
    return (f"no mkdocs.yml in {folder}: run this in your MkDocs site's folder, name its configuration with "
            f"--config FILE, or start a site with: transformer-trace new DIR")


def find_config(given: Path | None, folder: Path | None = None) -> Path | None:
    """``given`` when it is a file (a UserError names a missing one), else ``folder``'s (default: the current folder's)
    mkdocs.yml, else None."""
    if given is not None:
        if not given.is_file():
            problem = "is a folder, not" if given.is_dir() else "there is no such"
            raise UserError(f"--config {given}: {problem} MkDocs configuration file")
        return given
    folder = Path.cwd() if folder is None else folder
    return next((folder / name for name in CONFIG_NAMES if (folder / name).is_file()), None)


def read_mkdocs_yaml(file: BinaryIO) -> Any:
    """A mkdocs.yml's data as MkDocs reads it (its loader: `!ENV`, Python tags, INHERIT merged), parsed by libyaml
    where PyYAML has it: the same values, parsed about fifteen times faster than by the pure-Python parser MkDocs uses
    (a build reads its mkdocs.yml twice; the warm server, at every regeneration). MkDocs' ConfigurationError when
    it is not YAML."""
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    import yaml  # type: ignore[import-untyped]
    from mkdocs.utils.yaml import get_yaml_loader, yaml_load

    return yaml_load(file, get_yaml_loader(yaml.CLoader) if getattr(yaml, "__with_libyaml__", False) else None)


def docs_dir(config: Path) -> Path:
    """The docs folder ``config`` builds (its `docs_dir`, relative to its folder; MkDocs' default `docs`)."""
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    from mkdocs.exceptions import ConfigurationError

    try:
        with open(config, "rb") as f:
            data = read_mkdocs_yaml(f) or {}
    except (ConfigurationError, OSError, ValueError) as exc:
        raise UserError(f"cannot load the MkDocs configuration {config}: {' '.join(str(exc).split())}") from None
    except (MemoryError, RecursionError):  # aliases that expand without end ("billion laughs"), nesting past the stack
        raise UserError(f"cannot load the MkDocs configuration {config}: it expands past what memory holds") from None
    if not isinstance(data, dict):
        raise UserError(f"{config}: not a MkDocs configuration (settings such as site_name:, not a "
                        f"{type(data).__name__})")
    value = data.get("docs_dir", "docs")
    if not isinstance(value, str) or not value.strip():
        shown = repr(value) if isinstance(value, (int, float, bool, type(None))) else f"a {type(value).__name__}"
        raise UserError(f"{config}: docs_dir: expected a folder name, not {shown}")  # a list may be of any size
    return config.resolve().parent / os.path.expanduser(value)


def site_of(command: str, config: Path | None, docs: Path | None, *, pdf: bool = False) -> tuple[Path | None,
                                                                                           Path | None]:
    """The mkdocs.yml and docs folder of site command ``command`` (build, trace, serve, pdf), each as given or else
    found as `mkdocs` finds it. Refuses (UserError, one line) when the command needs a mkdocs.yml and there is none."""
    found = find_config(config)
    optional = docs is not None and command in _WITHOUT_CONFIG and not pdf
    if found is None and not optional:
        raise UserError(no_config_message(Path.cwd()))
    if docs is None and found is not None:  # (without a docs folder, a missing config was refused above)
        docs = docs_dir(found)
    return found, docs


def locate_site(args: argparse.Namespace) -> None:
    """Fill in ``args.config`` and the docs folder of a site command (build, trace, serve, pdf) left unset on the
    command line (site_of)."""
    option = DOCS_OPTION.get(args.command)
    if option is None:
        return
    args.config, docs = site_of(args.command, getattr(args, "config", None), getattr(args, option, None),
                                pdf=getattr(args, "pdf", False))
    setattr(args, option, docs)
