"""Each report's regenerate form and API fields, derived from its options dataclass (``SiteForms.of(reports)``: the
server is handed the reports it regenerates by the command line).

A field's API name is its CLI flag without the dashes (``--vit-size``: vit_size). The fields whose metadata has a
``form`` are shown by generator/assets/tt-regenerate.js, which reads them from /api/status, in field order; the
report's other options are API only. The API never makes the server read a file of its own or download anything:
an option of kind "path" (or a file form field) is taken only as an upload, and an option whose value is free text
of no safe kind (not "text", a number, a choice or a path) takes only the values its declaration lists in
``api_values`` (generator/options.py option()); without such a list it takes no value through the API at all, so
a new option of that sort stays closed until someone decides what is safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import Field, dataclass, fields
from typing import Any

from transformer_trace.options import flag_of, option_kind

SAFE_KINDS = ("int", "positive", "seed", "text")  # option kinds whose values cannot name a file or a download


def report_form(options_type: type) -> dict[str, Any]:
    """One report's form: ``fields`` (shown), ``options`` (API only: name -> flag), ``uploads`` (the options taken
    only as an uploaded file), ``values`` (the options restricted to a few values; an empty tuple: not settable
    here) and ``read_by`` (API name -> the options field whose parser reads its value)."""
    entries, options, uploads, values = [], {"device": "--device"}, set(), {}
    read_by: dict[str, Field[Any]] = {}
    for f in fields(options_type):
        if not f.init:
            continue
        flag = flag_of(f)
        name = flag.removeprefix("--").replace("-", "_")
        read_by[name] = f
        meta = f.metadata
        kind = option_kind(f)  # as every face reads it (generator/options.py option_value)
        form = meta.get("form")
        if kind == "path" or (form or {}).get("type") == "file":
            uploads.add(name)
        elif not (meta.get("choices") or kind in SAFE_KINDS):
            values[name] = tuple(meta.get("api_values") or ())
        if form:
            entries.append({"name": name, "option": flag, **form})
        elif name != "device":
            options[name] = flag
    common = [e for e in entries if e["name"] in ("seed",
                                                  "layer")]  # the report's own inputs first, then seed and layer
    return {"fields": [e for e in entries if e not in common] + common, "options": options, "uploads": uploads,
            "values": values, "read_by": read_by}


def forms_of(reports: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The form of each report in ``reports`` (key -> an object with ``options``, as the registry holds them)."""
    return {key: report_form(report.options) for key, report in reports.items()}


@dataclass(frozen=True)
class SiteForms:
    """The forms of the reports a site regenerates: ``by_report`` is report key -> form, in site order."""

    by_report: dict[str, dict[str, Any]]

    @classmethod
    def of(cls, reports: Mapping[str, Any]) -> SiteForms:
        return cls(forms_of(reports))

    def file_fields(self) -> set[str]:
        """The API fields of every report that are uploads."""
        return set().union(*(form["uploads"] for form in self.by_report.values()))

    def options_for(self, model: str) -> dict[str, str]:
        """API field -> CLI option for ``model`` ("all": every report's)."""
        out: dict[str, str] = {}
        for form in self._chosen(model):
            out.update({f["name"]: f["option"] for f in form["fields"]})
            out.update(form["options"])
        return out

    def option_field(self, model: str, name: str) -> Field[Any]:
        """The options field that reads API field ``name`` of ``model`` ("all": the first report's that has it, as the
        command line's one flag for an option several reports share)."""
        return next(form["read_by"][name] for form in self._chosen(model) if name in form["read_by"])

    def restricted_values(self, model: str) -> dict[str, tuple[str, ...]]:
        """API field -> the only values the API takes for it, for ``model`` ("all": every report's)."""
        out: dict[str, tuple[str, ...]] = {}
        for form in self._chosen(model):
            out.update(form["values"])
        return out

    def _chosen(self, model: str) -> list[dict[str, Any]]:
        return list(self.by_report.values()) if model == "all" else [self.by_report[model]]
