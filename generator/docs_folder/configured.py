"""The reports mkdocs.yml declares (the transformer-trace plugin's `reports:`), and whether docs/ is up to date with
them.

Torch-free on purpose: `mkdocs build` with every report up to date reads mkdocs.yml, the manifest
(docs/.generated.json) and a digest of the generator's sources, and imports nothing of the models.

A report's *declaration* is what mkdocs.yml says about it: its options as written (paths resolved against
mkdocs.yml's folder) and the size and modification time of the files they name. The manifest records, for every
generated report, the declaration it was generated under and the generator version. The plugin regenerates a
report when it is missing, or when its declaration or the version differs from the record. The CLI and the warm
server record the declaration too, so a report regenerated with flags (which override mkdocs.yml) stays until
mkdocs.yml's declaration for it changes.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import metadata
from pathlib import Path
from typing import Any

PLUGIN = "transformer-trace"
RUNS = "runs"  # the manifest's record of each generated report: {"declared": ..., "version": ..., "options": ...}

_PACKAGE = Path(__file__).resolve().parent.parent  # generator/
# The models' folder: inside the package once installed under its own name (transformer_trace/models), beside it in
# the clone (the design card's top-level models/).
_MODELS = next((p for p in (_PACKAGE / "models", _PACKAGE.parent / "models") if p.is_dir()), _PACKAGE.parent / "models")
# Modules that never change what a report's files contain: editing them does not make reports stale (site/: the
# staging, the MkDocs plugin and build, the server).
_NOT_CONTENT = {"site", "pdf.py", "__main__.py", "assets"}
_version: str | None = None


def generator_version() -> str:
    """The package version and a digest of the sources that write reports (models, generator, templates)."""
    global _version
    if _version is None:
        sha = hashlib.sha256()
        for root in (_PACKAGE, _MODELS):
            for folder, dirs, names in os.walk(root):
                dirs[:] = sorted(d for d in dirs if d not in _NOT_CONTENT and not d.startswith((".", "__pycache__")))
                for name in sorted(names):
                    if name in _NOT_CONTENT or name.endswith((".pyc", ".pyo")):
                        continue
                    path = Path(folder) / name
                    sha.update(path.relative_to(root.parent).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
        try:
            release = metadata.version(PLUGIN)
        except metadata.PackageNotFoundError:
            release = "0"
        _version = f"{release}+{sha.hexdigest()[:16]}"
    return _version


def is_path_option(name: str, value: Any) -> bool:
    """Whether option ``name`` names a file: the ViT's image, its weights unless random or imagenet."""
    return name in PATH_OPTIONS and isinstance(value, str) and value not in PATH_OPTIONS[name]


# Options whose value is a file path (relative to mkdocs.yml in the plugin's configuration), with the words that
# are not paths. Kept here, torch-free, for the up-to-date check; tests/test_plugin.py checks it against the
# options dataclasses (fields with kind "path" and the weights option).
PATH_OPTIONS: dict[str, tuple[str, ...]] = {"image": (), "weights": ("random", "imagenet")}


def resolve(options: dict[str, Any], base: Path) -> dict[str, Any]:
    """The options with file paths made absolute against ``base`` (mkdocs.yml's folder); None values dropped."""
    out = {}
    for name, value in options.items():
        if value is None:
            continue
        if is_path_option(name, value):
            value = str((base / os.path.expanduser(value)).resolve())
        out[name] = value
    return out


def declaration(options: dict[str, Any], base: Path) -> dict[str, Any]:
    """What mkdocs.yml declares for one report: its resolved options and the files they name (size, mtime)."""
    resolved = resolve(options, base)
    files: dict[str, list[int] | None] = {}
    for name, value in resolved.items():
        if is_path_option(name, value):
            try:
                st = os.stat(value)
                files[name] = [st.st_size, st.st_mtime_ns]
            except OSError:
                files[name] = None
    return json.loads(json.dumps({"options": resolved, "files": files}, sort_keys=True, default=str))


def declarations(reports: dict[str, Any] | None, config_file: Path | str | None) -> dict[str, dict[str, Any]]:
    """Each declared report's declaration (``reports`` as the plugin's configuration holds it)."""
    from transformer_trace.errors import UserError  # torch-free

    base = Path(config_file).resolve().parent if config_file else Path.cwd()
    for key, options in (reports or {}).items():  # the CLI's own words (generator/build_request.py declared_options)
        where = f"{Path(config_file).name if config_file else 'mkdocs.yml'}: plugins.{PLUGIN}.reports.{key}"
        if options is not None and not isinstance(options, dict):
            raise UserError(f"{where}: expected the report's options as a mapping (name: value)")
        refuse_unset(options or {}, where)
    return {key: declaration(dict(options or {}), base) for key, options in (reports or {}).items()}


def refuse_unset(options: dict[str, Any], where: str) -> None:
    """An option without a value (``prompt:``, or ``!ENV VAR`` of a variable that is not set) is refused rather than
    silently taking the default, which would publish a report of an input nobody chose."""
    from transformer_trace.errors import UserError  # torch-free

    for name, value in options.items():
        if value is None:
            raise UserError(f"{where}.{name}: has no value (an !ENV variable that is not set?): set it, give "
                            f"!ENV a default ([VARIABLE, default]) or remove the option")


def read_runs(docs: Path) -> dict[str, Any]:
    """The manifest's record of each generated report ({} when there is none or it cannot be read)."""
    try:
        data = json.loads((docs / ".generated.json").read_text(encoding="utf-8"))
        runs = data.get(RUNS, {})
        return runs if isinstance(runs, dict) else {}
    except (OSError, ValueError, AttributeError):
        return {}


def stale(docs: Path, declared: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The declared reports that must be (re)generated, each with the reason."""
    runs, version = read_runs(docs), None
    out = {}
    for key, wanted in declared.items():
        record = runs.get(key)
        if not (docs / key / "snapshots.json").is_file() or not isinstance(record, dict):
            out[key] = "not generated yet"
        elif record.get("declared") != wanted:
            out[key] = "its options in mkdocs.yml changed"
        elif record.get("version") != (version := version or generator_version()):
            out[key] = "the generator changed"
    return out


def plugin_reports(config_file: Path) -> dict[str, Any] | None:
    """The plugin's `reports:` in ``config_file`` (INHERIT and !ENV applied as MkDocs does, the plugin's options
    validated by its own schema), or None when the file has no transformer-trace entry."""
    from transformer_trace.errors import UserError

    if not config_file.is_file():
        return None
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    from mkdocs.exceptions import ConfigurationError

    from transformer_trace.docs_folder.location import read_mkdocs_yaml

    try:
        with open(config_file, "rb") as f:
            data = read_mkdocs_yaml(f) or {}
    except (ConfigurationError, OSError) as exc:
        raise UserError(f"cannot load the MkDocs configuration {config_file}: {' '.join(str(exc).split())}") from None
    plugins = data.get("plugins") or []
    entries = list(plugins.items()) if isinstance(plugins, dict) else [
        next(iter(item.items())) if isinstance(item, dict) else (item, {}) for item in plugins]
    declared = [value for name, value in entries if name == PLUGIN]
    if not declared:
        return None
    options = declared[0]
    from transformer_trace.docs_folder.plugin_options import TransformerTraceConfig

    schema = TransformerTraceConfig(config_file_path=str(config_file))
    schema.load_dict(options or {})
    errors, _warnings = schema.validate()
    if errors:
        name, error = errors[0]
        raise UserError(f"{config_file.name}: plugins.{PLUGIN}.{name}: {error}")
    declarations(schema.reports, config_file)  # refuses options that are not a mapping or have no value
    return dict(schema.reports or {})
