"""What a build request means, whichever face it came through: a typed, frozen ``BuildRequest``.

The command line parses argv into one (generator/arguments.py ``build_request``), the MkDocs plugin builds one per
declared report from mkdocs.yml, the warm server one from a request's fields (generator/site/api.py). Every option
value is read by ``options.option_value`` (the parsers argparse uses for the flags), so the same input gets the same
answer in the same one line; nothing is turned back into argv to be parsed again. A report's options are the values
the request names, else mkdocs.yml's declaration (the plugin's `reports:`), else its defaults (``report_options``).
Generic code: the reports are handed in by the face that makes the request.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from transformer_trace.docs_folder.configured import PLUGIN, declarations, generator_version, plugin_reports, resolve
from transformer_trace.docs_folder.location import site_of
from transformer_trace.errors import UserError
from transformer_trace.options import OptionRefused, RunOptions, choice, flag_of, option_value

if TYPE_CHECKING:
    from transformer_trace.build import BuildResult
    from transformer_trace.catalogue import Report
    from transformer_trace.progress import Progress

ALL = "all"  # `--model all`: every report (with a declaration: the reports it lists)


@dataclass(frozen=True)
class BuildRequest:
    """One `build`: which report(s), the option values the request names (by field name, already read and checked
    one by one), where the site is, and how the build behaves."""

    model: str = ALL  # a report key or "all"
    given: Mapping[str, Any] = field(default_factory=dict)  # option field name -> value; unnamed options: defaults
    out: Path | None = None  # the docs folder (None: the docs_dir of config, filled by located())
    config: Path | None = None  # mkdocs.yml declaring the reports (None: ./mkdocs.yml when there is one)
    force: bool = False  # overwrite generated files edited by hand
    pdf: bool = False  # also export the PDFs (checked before anything is written)
    quiet: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "given", MappingProxyType(dict(self.given)))

    def located(self) -> BuildRequest:
        """This request with its mkdocs.yml and docs folder found as `mkdocs` finds them (a UserError when it needs a
        mkdocs.yml and there is none, or --config names none)."""
        config, out = site_of("build", self.config, self.out, pdf=self.pdf)
        return dataclasses.replace(self, config=config, out=out)


def checked_model(model: str, keys: Iterable[str]) -> str:
    """``model`` when it is one of the report ``keys`` or all of them, else refused in the CLI's words."""
    choice("--model", model, (ALL, *keys))
    return model


def report_options(request: BuildRequest, reports: Mapping[str, Report], declared: Mapping[str, Any] | None = None,
                   config_file: Path | None = None) -> dict[str, RunOptions]:
    """The options of every report ``request.model`` asks for: its given values, else mkdocs.yml's (``declared``, the
    plugin's `reports:`), else each report's own defaults. With a declaration, "all" means the reports it lists."""
    for key in declared or {}:
        if key not in reports:
            raise UserError(f"{config_key(config_file, key)}: unknown report; the reports are: {', '.join(reports)}")
    if request.model != ALL:
        wanted = [checked_model(request.model, reports)]
    else:
        wanted = [key for key in reports if key in declared] if declared else list(reports)
    taken = {f.name for key in wanted for f in fields(reports[key].run_options)}
    for report in reports.values():  # an option only another report takes would be silently ignored: refuse it
        for f in fields(report.run_options):
            if f.init and f.name not in taken and request.given.get(f.name) is not None:
                owners = [k for k, r in reports.items() if f.name in {g.name for g in fields(r.run_options)}]
                raise UserError(f"{flag_of(f)} is an option of the {' and '.join(owners)} report, not of --model "
                                f"{request.model}")
    requests = {}
    for key in wanted:
        options_type = reports[key].run_options
        given = {f.name: request.given[f.name] for f in fields(options_type)
                 if f.init and request.given.get(f.name) is not None}
        from_config = declared_options(key, (declared or {}).get(key) or {}, config_file, reports)
        try:
            requests[key] = options_type(**{**from_config, **given})  # validates: a UserError names the bad option
        except UserError as exc:
            if not from_config or (given and _valid(options_type, from_config)):
                raise  # mkdocs.yml's options alone are fine: the values the request named are what is refused
            named = [name for name, f in config_names(options_type).items()
                     if f.name in from_config and f.name not in given
                     and re.search(re.escape(flag_of(f)) + r"(?![\w-])", str(exc))]
            raise UserError(f"{config_key(config_file, key)}{'.' + named[0] if named else ''}: {exc}") from None
    return requests


def _valid(options_type: type[RunOptions], values: dict[str, Any]) -> bool:
    try:
        options_type(**values)
    except UserError:
        return False
    return True


def config_key(config_file: Path | None, key: str | None = None) -> str:
    """Where report ``key``'s options are in mkdocs.yml, as refusals name it (without a key: the plugin's reports)."""
    return f"{config_file.name if config_file else 'mkdocs.yml'}: plugins.{PLUGIN}.reports{'.' + key if key else ''}"


def config_names(options_type: type[RunOptions]) -> dict[str, dataclasses.Field[Any]]:
    """A report's options by their mkdocs.yml names: the CLI flag, its dashes as underscores (--vit-size: vit_size)."""
    return {flag_of(f)[2:].replace("-", "_"): f for f in fields(options_type) if f.init}


def declared_options(key: str, options: Mapping[str, Any], config_file: Path | None,
                     reports: Mapping[str, Report]) -> dict[str, Any]:
    """mkdocs.yml's options of report ``key``, each read as the CLI reads its flag (paths relative to mkdocs.yml's
    folder); a bad one is refused in the CLI's words, naming its mkdocs.yml key."""
    where = config_key(config_file, key)
    if key not in reports:
        raise UserError(f"{where}: unknown report; the reports are: {', '.join(reports)}")
    if not isinstance(options, dict):
        raise UserError(f"{where}: expected the report's options as a mapping (name: value)")
    names = config_names(reports[key].run_options)
    base = config_file.resolve().parent if config_file else Path.cwd()
    values: dict[str, Any] = {}
    for name, value in resolve(options, base).items():
        if name not in names:
            raise UserError(f"{where}.{name}: unknown option; the {key} report takes {', '.join(names)}")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise UserError(f"{where}.{name}: expected text or a number, not {value!r}")
        try:
            values[names[name].name] = option_value(names[name], str(value))
        except OptionRefused as exc:
            raise UserError(f"{where}.{name}: {exc.problem}") from None
    return values


def run_records(requests: Mapping[str, RunOptions], declared: Mapping[str, Any] | None,
                config_file: Path | None) -> dict[str, dict[str, Any]]:
    """What the manifest records of each generated report: the mkdocs.yml declaration it was made under, the generator
    version, and its options (docs_folder/configured.py decides from the first two whether it is up to date)."""
    declarations_now = declarations({key: (declared or {}).get(key) for key in requests if key in (declared or {})},
                                    config_file)
    return {key: {"declared": declarations_now.get(key), "version": generator_version(),
                  "options": {f.name: str(getattr(opts, f.name)) for f in fields(opts) if f.init}} for key,
            opts in requests.items()}


def run_build(request: BuildRequest, reports: Mapping[str, Report], progress: Progress | None = None) -> BuildResult:
    """Build what ``request`` asks for (located first); UserError for bad input. The CLI, the plugin's faces and the
    warm server all build through here."""
    from transformer_trace.build import build
    from transformer_trace.progress import Progress

    request = request.located()
    config_file, out = request.config, request.out
    assert out is not None  # located(): a docs folder, or a refusal
    declared = plugin_reports(config_file) if config_file is not None else None
    requests = report_options(request, reports, declared, config_file)
    if request.pdf:  # refuse before anything is written, not after the new site is in place
        from transformer_trace.pdf import find_chromium, site_dir

        assert config_file is not None  # located(): --pdf builds the site, so a mkdocs.yml was found or refused
        find_chromium()
        site_dir(config_file, out)
    return build(out, requests, progress or Progress(enabled=False if request.quiet else None), force=request.force,
                 records=run_records(requests, declared, config_file), reports=reports)
