"""Turn a recorded run into the report's Markdown pages, figures and snapshots.json."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import torch

from generator.catalogue import Report, Snapshot, parse_dimension
from generator.reports import REPORTS
from generator.checks import CheckResult
from generator.options import command_line, plural
from generator.run import ModelRun
from generator.template_cache import use_template_cache
from generator.tensor_data import explore_info
from generator.tensors import TensorView, fmt, json_number
from generator.text import fence_title, page_text

log = logging.getLogger("generator")

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
TEMPLATES = PACKAGE_DIR / "templates"
SOURCE_CONTEXT_BEFORE, SOURCE_CONTEXT_AFTER = 6, 3


def escape_text(value: Any) -> str:
    return page_text(value)  # generator/text.py: the one path for user text


def literal_block(value: Any) -> str:
    """Text (model output, user text) as a fenced code block that shows it exactly: Markdown and HTML are not parsed
    inside, the fence is longer than any run of backticks in the text, and control characters other than the line
    break show as their Unicode control pictures (U+2400 + code)."""
    text = "".join(ch if ch == "\n" or ch.isprintable() or ch == " " else (chr(0x2400 + ord(ch)) if ord(ch) < 0x20 else "\ufffd")
                   for ch in str(value))
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return f"{fence}text\n{text}\n{fence}"


def format_shape(shape: tuple | list) -> str:
    items = [str(x) for x in shape]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


@cache
def environment() -> jinja2.Environment:
    """Generic templates by name; a report's own as "<report key>/<name>" (from its folder's templates/)."""
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader([
            jinja2.FileSystemLoader(TEMPLATES),
            jinja2.PrefixLoader({key: jinja2.FileSystemLoader(report.templates) for key, report in REPORTS.items()}),
        ]),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # output is Markdown; user text goes through the `text` filter
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        f=lambda v, d=4: fmt(v, d),
        text=escape_text,
        plural=lambda n, word, many=None: plural(int(n), word, many),
        shape=format_shape,
        pct=lambda v, d=1: f"{100 * float(v):.{d}f}%",
        literal_block=literal_block,
        thousands=lambda v: f"{int(v):,}",
        code=lambda v: f"<code>{escape_text(v)}</code>",  # user text as inline code (a traced script's names and paths)
        fence_title=fence_title,
        infinities_blocked=infinities_blocked,
    )
    env.globals["explore"] = explore_info  # _explore.md.j2: data files, explorer and value browser of a page
    return use_template_cache(env)  # compiled once, not in every process (generator/template_cache.py)


def infinities_blocked(view: TensorView) -> int:
    """How many entries an additive mask of 0 (allowed) and −∞ (blocked) blocks, for text that describes that form. A
    traced mask in another form (boolean, −1e9) passes its check but is not what such text says: NotCheckable, so the
    block falls back naming the form it needs."""
    from generator.sources import NotCheckable

    t = view.tensor
    needed = "a mask of 0 and −∞ (the form the catalogue's model adds to the scores)"
    if t.dtype == torch.bool:
        raise NotCheckable(needed, "yours is boolean")
    blocked = int(torch.isneginf(t).sum())
    if blocked + int((t == 0).sum()) != t.numel():
        raise NotCheckable(needed, f"yours holds other values, from {fmt(float(t.min()))} to {fmt(float(t.max()))}")
    return blocked


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
    named_shape: tuple[str, ...]  # the expected shape in the legend's symbols: the snapshot's, or the first tensor's declared one
    expected_shape: tuple[int, ...]  # the same in this run's sizes
    checks: list[CheckResult]
    figures: list[dict[str, str]] = field(default_factory=list)
    explanation: str = ""
    questions: list[dict[str, Any]] = field(default_factory=list)  # the guiding questions it informs, with short answers
    prev: SnapshotPage | None = None
    next: SnapshotPage | None = None

    captured = True  # a bundled run records every snapshot (a trace's pages may not have captured theirs)

    @property
    def label(self) -> str:
        return self.report.label(self.snap.number)

    @property
    def check(self) -> CheckResult:
        """The snapshot's checks as one result (the only one, when it has one)."""
        return CheckResult.combined(self.checks)

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
    return tuple(parse_dimension(expression, run.dims) for expression in named)


def named_shape(run: ModelRun, snap: Snapshot) -> tuple[str, ...]:
    """What the page expects of its first tensor: the snapshot's own shape (a slice), else the model's declaration."""
    if snap.shape is not None:
        return snap.shape
    name = run.name(snap.main)
    if name not in run.declared:
        raise ValueError(f"snapshot {snap.number}: {name} is not a declared record point of the model, and the snapshot gives no shape")
    return run.declared[name].shape


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
            slice_index, slice_text = view.slice_text(whole=report.whole_values)
            sections.append(TensorSection(
                name=run.name(name), view=view, index=index, device=run.device,
                source=source_excerpt(file, line), slice_index=slice_index, slice_text=slice_text,
            ))
        named = named_shape(run, snap)
        pages.append(SnapshotPage(
            report=report, snap=snap, path=page_path(snap), tensors=sections,
            named_shape=named, expected_shape=expected_shape(run, named),
            checks=[check.run(run) for check in snap.checks],
            figures=[{"file": f"figures/{fid}.png", "caption": report.figure(fid).caption} for fid in snap.figures],
        ))
    for before, after in zip(pages, pages[1:]):
        before.next, after.prev = after, before
    return pages


# ----------------------------------------------------------------------------- rendering


def report_template(report: Report, name: str, env: jinja2.Environment | None = None) -> jinja2.Template | None:
    """The report's own template ``name`` (explain/inputs/questions.md.j2), or None while it has none."""
    try:
        return (env or environment()).get_template(f"{report.key}/{name}")
    except jinja2.TemplateNotFound:
        return None


def render_block(template: jinja2.Template | None, block: str, context: dict[str, Any]) -> str | None:
    """One block of a report template that extends _select.md.j2, or None when the template or block is missing."""
    if template is None or block not in template.blocks:
        return None
    return template.render(block=block, **context).strip()


def missing_blocks(report: Report) -> list[str]:
    """What falls back to generic text: each snapshot without its block s<n> in explain.md.j2, each question without
    q<n> (its answer) or q<n>_short (its one-line answer on the snapshot pages) in questions.md.j2."""
    explanations, questions = report_template(report, "explain.md.j2"), report_template(report, "questions.md.j2")
    explained = set(explanations.blocks) if explanations else set()
    answered = set(questions.blocks) if questions else set()
    return ([f"{report.label(s.number)} (no block s{s.number} in explain.md.j2)" for s in report.snapshots if f"s{s.number}" not in explained]
            + [f"question {q.number} (no block {block} in questions.md.j2)" for q in report.questions
               for block in (f"q{q.number}", f"q{q.number}_short") if block not in answered])


def render_report(report: Report, run: ModelRun, out_dir: Path) -> list[SnapshotPage]:
    """Write the report's pages and snapshots.json under ``out_dir`` (figures are separate).

    A report without its own explanation or question templates still renders: generic text
    stands in (_fallback_explain.md.j2), so a new report shows its pages at once; the build warns,
    naming each snapshot and question that falls back.
    """
    if missing := missing_blocks(report):
        log.warning("%s: generic text stands in for %d explanations or answers: %s", report.key, len(missing), "; ".join(missing))
    pages = build_pages(report, run)
    extra = write_pages(report, run, pages, out_dir)
    (out_dir / "snapshots.json").write_text(json.dumps({**snapshots_json(report, run, pages), "extra_pages": extra}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return pages


def _written(template: jinja2.Template | None, block: str, context: Any, fallback: Any, trace: Any) -> str:
    """Block ``block`` of the report's ``template`` rendered with ``context()``, else ``fallback(needs)``: needs is None
    where the report has no such block, and, in a trace, what the block needed that the trace lacks (trace.needs reads
    it from the exception: a tensor not captured, an input a trace does not know, a value the user's tensor does not have)."""
    if trace is None:
        return render_block(template, block, context()) or fallback(None)
    try:
        return render_block(template, block, context()) or fallback(None)
    except trace.LACKS as exc:
        return fallback(trace.needs(exc))


def write_pages(report: Report, run: Any, pages: list[Any], out_dir: Path, trace: Any = None) -> list[dict[str, Any]]:
    """Write the snapshot pages, stage pages, overview, extra pages, guiding questions and print view of ``pages``
    (returns the extra pages' entries for snapshots.json).

    One set of templates for every report: a bundled run (``run`` a ModelRun, ``trace`` None) and a traced script
    (generator/trace/report.py: ``run`` a TracedRun over the captured tensors, ``trace`` its TraceReport, whose parts —
    captured or not, the user's code, layouts, the outcome — are the templates' ``{% if trace %}`` sections). The
    report's own explanation and answer blocks render against either; in a trace a block that needs what the trace
    lacks falls back, for that block alone, to generic text with the user's numbers saying what it would need.
    """
    env = environment() if trace is None else trace.environment()
    if trace is not None:
        command = trace.command
    else:
        command = command_line(report.key, run.options) if run.options is not None else f"python -m generator build --model {report.key}"
    common = {"report": report, "run": run, "inputs": run.inputs, "dims": run.dims, "stamp": run.stamp(), "command": command, "trace": trace}
    if trace is not None:
        common["explore"] = trace.explore
    by_number = {p.snap.number: p for p in pages}
    block_pages = trace.block_pages(pages) if trace is not None else by_number  # what the report's blocks read of each page
    explanations, questions = report_template(report, "explain.md.j2", env), report_template(report, "questions.md.j2", env)
    fallback = env.get_template("_fallback_explain.md.j2")
    answered = env.get_template("_fallback_answer.md.j2") if trace is not None else None
    blocks = {"pages": block_pages, **common}
    for page in pages:
        if trace is not None and not page.captured:
            continue

        def explain_context(page: Any = page) -> dict[str, Any]:
            shown = block_pages[page.snap.number]
            return {"x": shown.main.view, "page": shown, "pages": block_pages, **common}

        def explain_fallback(needs: str | None, page: Any = page, failed: bool = False) -> str:
            extra = {"needs": needs, "failed": failed} if trace is not None else {}
            return fallback.render(**{"x": page.main.view, "page": page, "pages": by_number, **common, **extra}).strip()

        if trace is not None and not page.check.passed and page.check.checkable:  # its words describe the step done right
            page.explanation = explain_fallback(None, failed=True)
        else:
            page.explanation = _written(explanations, f"s{page.snap.number}", explain_context, explain_fallback, trace)

    def answer_fallback(q: Any, short: bool, failed: list[Any] = ()) -> Any:
        if trace is None:
            return lambda needs: ""
        return lambda needs: answered.render(question=q, short=short, needs=needs, failed=failed, pages=pages, **common).strip()

    def answer(q: Any, short: bool) -> str:
        block = f"q{q.number}_short" if short else f"q{q.number}"
        # In a trace, a written answer describes the steps done right: not where a snapshot informing it failed its check.
        failed = [p for p in pages if q.number in p.snap.questions and not p.check.passed and p.check.checkable] if trace is not None else []
        if failed:
            return answer_fallback(q, short, failed)(None)
        return _written(questions, block, lambda: blocks, answer_fallback(q, short), trace)

    shorts = {q.number: answer(q, short=True) for q in report.questions}
    for page in pages:
        page.questions = [{"question": report.question(n), "short": shorts[n]} for n in page.snap.questions]
    answers = {q.number: answer(q, short=False) for q in report.questions}
    intro = _written(questions, "intro", lambda: blocks, lambda needs: "", trace)
    by_stage = {stage.key: [p for p in pages if p.snap.stage == stage.key] for stage in report.stages}

    def write(rel: str, template: str, **context: Any) -> str:
        text = env.get_template(template).render(**common, **context)
        if rel:
            target = out_dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        return text

    for page in pages:
        write(page.path, "snapshot.md.j2", page=page)
    for stage in report.stages:
        write(f"{stage.key}/index.md", "stage.md.j2", stage=stage, pages=by_stage[stage.key])
    inputs = report_template(report, "inputs.md.j2") if trace is None else None  # a trace knows its tensors, not its inputs
    write("index.md", "overview.md.j2", pages=pages, by_stage=by_stage, inputs_section=inputs.render(**common) if inputs else "")
    extra = []
    for extra_page in report.extra_pages if trace is None else ():  # the rollout, training: they read the model
        checks = [check.run(run) for check in extra_page.checks]
        check = CheckResult.combined(checks)
        figures = [{"file": f"figures/{fid}.png", "caption": report.figure(fid).caption} for fid in extra_page.figures]
        body = env.get_template(f"{report.key}/{extra_page.template}").render(check=check, figures=figures, pages=by_number, **common)
        write(f"{extra_page.slug}.md", "extra_page.md.j2", extra=extra_page, body=body, checks=checks, figures=figures)
        extra.append({"title": extra_page.title, "page": f"{extra_page.slug}.md", "check": {"name": check.name, "passed": check.passed, "detail": check.detail}})
    questions_page = write("questions.md", "questions.md.j2", pages=pages, intro=intro, answers=answers)
    write("print.md", "print.md.j2", pages=pages, questions=shift_headings(questions_page, 1))
    return extra


def shift_headings(markdown: str, levels: int) -> str:
    """Demote every ATX heading outside code blocks by ``levels`` (# -> ##)."""
    lines, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        lines.append("#" * levels + line if line.startswith("#") and not fenced else line)
    return "\n".join(lines) + "\n"


def _check_json(check: CheckResult) -> dict[str, Any]:
    return {"name": check.name, "passed": check.passed, "detail": check.detail, "status": check.status}


def snapshots_json(report: Report, run: ModelRun, pages: list[SnapshotPage]) -> dict[str, Any]:
    stamp = run.stamp()
    return {
        "model": report.key,
        "title": report.title,
        "short_title": report.short_title,
        "order": list(REPORTS).index(report.key) if report.key in REPORTS else len(REPORTS),  # site order, for the MkDocs plugin
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
                "expected_shape": list(p.named_shape),
                "dtype": p.main.view.dtype,
                "first": [json_number(v) for v in p.main.view.first(16)],
                "stats": {k: json_number(v) for k, v in p.main.view.stats.items()},
                "source": {"path": p.main.source.path, "line": p.main.source.line},
                "check": {"name": p.check.name, "passed": p.check.passed, "detail": p.check.detail},
                **({"checks": [_check_json(c) for c in p.checks]} if len(p.checks) > 1 else {}),
                "tensors": [{"name": t.name, "shape": list(t.view.shape), "source": {"path": t.source.path, "line": t.source.line}} for t in p.tensors],
                "figures": [f["file"] for f in p.figures],
            }
            for p in pages
        ],
    }
