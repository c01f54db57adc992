"""Turn a recorded run into the report's Markdown pages, figures and snapshots.json."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from generator.catalogue import Report, Snapshot
from generator.checks import CheckResult, run_check
from generator.run import ModelRun
from generator.tensor_data import explore_info  # explorer
from generator.tensors import TensorView, fmt, json_number

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
TEMPLATES = PACKAGE_DIR / "templates"
SOURCE_CONTEXT_BEFORE, SOURCE_CONTEXT_AFTER = 6, 3

# Characters that mean something to Markdown, HTML, arithmatex or Jinja: user text shows
# them as numeric character references, so it is displayed literally and never parsed.
_SPECIAL = re.compile(r"[\\`*_{}\[\]()#+\-.!|$<>&\"'~^=:%@]")


def escape_text(value: Any) -> str:
    return _SPECIAL.sub(lambda m: f"&#{ord(m.group())};", str(value))


def format_shape(shape: tuple | list) -> str:
    items = [str(x) for x in shape]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # output is Markdown; user text goes through the `text` filter
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        f=lambda v, d=4: fmt(v, d),
        text=escape_text,
        shape=format_shape,
        pct=lambda v, d=1: f"{100 * float(v):.{d}f}%",
        thousands=lambda v: f"{int(v):,}",
    )
    env.globals["explore"] = explore_info  # explorer: used by _explore.md.j2
    return env


# ----------------------------------------------------------------------------- page data


@dataclass
class SourceExcerpt:
    path: str  # relative to the repository root
    line: int
    start: int
    lines: list[str]

    @property
    def highlight(self) -> int:
        return self.line - self.start + 1


@dataclass
class TensorSection:
    name: str  # record name
    view: TensorView
    index: str | None
    device: str
    source: SourceExcerpt
    slice_index: str
    slice_text: str


@dataclass
class SnapshotPage:
    report: Report
    snap: Snapshot
    path: str  # page path within the report folder, e.g. "encoder/07-self-attention-queries-q.md"
    tensors: list[TensorSection]
    expected_shape: tuple[int, ...]
    check: CheckResult
    figures: list[dict[str, str]] = field(default_factory=list)
    explanation: str = ""
    prev: SnapshotPage | None = None
    next: SnapshotPage | None = None

    @property
    def label(self) -> str:
        return self.report.label(self.snap.number)

    @property
    def main(self) -> TensorSection:
        return self.tensors[0]

    @property
    def shape_ok(self) -> bool:
        return all(t.view.shape == self.expected_shape for t in self.tensors)

    def link_from(self, other_path: str) -> str:
        """Relative link from page ``other_path`` to this page."""
        depth = other_path.count("/")
        return "../" * depth + self.path


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def page_path(snap: Snapshot) -> str:
    return f"{snap.stage}/{snap.number:02d}-{slugify(snap.title)}.md"


def expected_shape(run: ModelRun, named: tuple[str, ...]) -> tuple[int, ...]:
    namespace = {"min": min, **run.dims}
    return tuple(int(eval(expr.replace("·", "*"), {"__builtins__": {}}, namespace)) for expr in named)  # noqa: S307 (catalogue data)


@cache
def _source_lines(path: str) -> list[str]:
    return Path(path).read_text(encoding="utf-8").splitlines()


def source_excerpt(file: str, line: int) -> SourceExcerpt:
    lines = _source_lines(file)
    start = max(1, line - SOURCE_CONTEXT_BEFORE)
    stop = min(len(lines), line + SOURCE_CONTEXT_AFTER)
    # Markdown drops blank lines at the edges of a code block, which would shift the numbering.
    while start < line and not lines[start - 1].strip():
        start += 1
    while stop > line and not lines[stop - 1].strip():
        stop -= 1
    try:
        shown = str(Path(file).resolve().relative_to(REPO_ROOT))
    except ValueError:
        shown = Path(file).name
    return SourceExcerpt(path=shown, line=line, start=start, lines=lines[start - 1 : stop])


def build_pages(report: Report, run: ModelRun) -> list[SnapshotPage]:
    pages = []
    for snap in report.snapshots:
        sections = []
        for i, name in enumerate(snap.tensors):
            index = snap.index if i == 0 else None
            view = run.tensor_view(name, index)
            file, line = run.source(name)
            slice_index, slice_text = view.slice_text()
            sections.append(TensorSection(
                name=run.name(name), view=view, index=index, device=run.device,
                source=source_excerpt(file, line), slice_index=slice_index, slice_text=slice_text,
            ))
        pages.append(SnapshotPage(
            report=report, snap=snap, path=page_path(snap), tensors=sections,
            expected_shape=expected_shape(run, snap.shape),
            check=run_check(run, snap.check, {k: _place(run, v) for k, v in snap.check_args.items()}),
            figures=[{"file": f"figures/{fid}.png", "caption": report.figure(fid).caption} for fid in snap.figures],
        ))
    for before, after in zip(pages, pages[1:]):
        before.next, after.prev = after, before
    return pages


def _place(run: ModelRun, value: Any) -> Any:
    if isinstance(value, str):
        return run.name(value)
    if isinstance(value, list):
        return [_place(run, v) for v in value]
    return value


# ----------------------------------------------------------------------------- rendering


def render_report(report: Report, run: ModelRun, out_dir: Path) -> list[SnapshotPage]:
    """Write the report's pages and snapshots.json under ``out_dir`` (figures are separate)."""
    env = environment()
    pages = build_pages(report, run)
    explanations = env.get_template(f"explain/{report.key}.md.j2")
    common = {"report": report, "run": run, "inputs": run.inputs, "dims": run.dims, "stamp": run.stamp()}
    for page in pages:
        page.explanation = explanations.render(x=page.main.view, page=page, **common).strip()
    by_stage = {stage.key: [p for p in pages if p.snap.stage == stage.key] for stage in report.stages}

    def write(rel: str, template: str, **context: Any) -> None:
        target = out_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        text = env.get_template(template).render(**common, **context)
        target.write_text(text, encoding="utf-8")

    for page in pages:
        write(page.path, "snapshot.md.j2", page=page)
    for stage in report.stages:
        write(f"{stage.key}/index.md", "stage.md.j2", stage=stage, pages=by_stage[stage.key])
    write("index.md", "overview.md.j2", pages=pages, by_stage=by_stage)
    questions = env.get_template(f"questions/{report.key}.md.j2").render(**common, pages={p.snap.number: p for p in pages})
    (out_dir / "questions.md").write_text(questions, encoding="utf-8")
    write("print.md", "print.md.j2", pages=pages, questions=shift_headings(questions, 1))
    (out_dir / "snapshots.json").write_text(json.dumps(snapshots_json(report, run, pages), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return pages


def shift_headings(markdown: str, levels: int) -> str:
    """Demote every ATX heading outside code blocks by ``levels`` (# -> ##)."""
    lines, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        lines.append("#" * levels + line if line.startswith("#") and not fenced else line)
    return "\n".join(lines) + "\n"


def snapshots_json(report: Report, run: ModelRun, pages: list[SnapshotPage]) -> dict[str, Any]:
    stamp = run.stamp()
    return {
        "model": report.key,
        "title": report.title,
        "seed": run.seed,
        "device": run.device,
        "dtype": stamp["dtype"],
        "torch": stamp["torch"],
        "weights": run.weights,
        "inputs": {k: v for k, v in run.inputs.items() if isinstance(v, (str, int, float))},
        "summary": run.inputs.get("summary", ""),
        "facts": run.inputs.get("facts", []),
        "dims": run.dims,
        "stages": [
            {"key": s.key, "title": s.title, "index": f"{s.key}/index.md", "pages": [p.path for p in pages if p.snap.stage == s.key]}
            for s in report.stages
        ],
        "snapshots": [
            {
                "number": p.snap.number,
                "label": p.label,
                "title": p.snap.title,
                "variable": p.snap.variable,
                "stage": p.snap.stage,
                "page": p.path,
                "shape": list(p.main.view.shape),
                "expected_shape": list(p.snap.shape),
                "dtype": p.main.view.dtype,
                "first": [json_number(v) for v in p.main.view.first(16)],
                "stats": {k: json_number(v) for k, v in p.main.view.stats.items()},
                "source": {"path": p.main.source.path, "line": p.main.source.line},
                "check": {"name": p.check.name, "passed": p.check.passed, "detail": p.check.detail},
                "tensors": [{"name": t.name, "shape": list(t.view.shape), "source": {"path": t.source.path, "line": t.source.line}} for t in p.tensors],
                "figures": [f["file"] for f in p.figures],
            }
            for p in pages
        ],
    }


def render_landing(out_dir: Path, reports: list[dict[str, Any]]) -> None:
    text = environment().get_template("landing.md.j2").render(reports=reports)
    (out_dir / "index.md").write_text(text, encoding="utf-8")

