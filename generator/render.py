"""Turn a recorded run into the report's Markdown pages, figures and snapshots.json."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from functools import cache, partial
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import jinja2
import torch

from transformer_trace.catalogue import Question, Report, Snapshot, parse_dimension
from transformer_trace.checks import CheckResult
from transformer_trace.options import command_line, plural
from transformer_trace.pages import (Column, Dimensions, Overview, PageContents, SnapshotPage, SourceExcerpt,
                                     TensorSection, snapshot_pages)
from transformer_trace.run import ModelRun
from transformer_trace.sources import Lacking, NotCheckable
from transformer_trace.template_cache import use_template_cache
from transformer_trace.tensor_data import explore_info
from transformer_trace.snapshots_file import snapshots_json, write_snapshots_json
from transformer_trace.tensors import TensorView, fmt
# noqa: F401 - user text's one path (templates' filters)
from transformer_trace.text import code, escape_text, fence_title, name_code, text_with_code

log = logging.getLogger("transformer_trace")

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
TEMPLATES = PACKAGE_DIR / "templates"
SOURCE_CONTEXT_BEFORE, SOURCE_CONTEXT_AFTER = 6, 3


def literal_block(value: Any) -> str:
    """Text (model output, user text) as a fenced code block that shows it exactly: Markdown and HTML are not parsed
    inside, the fence is longer than any run of backticks in the text, and control characters other than the line
    break show as their Unicode control pictures (U+2400 + code)."""
    text = "".join(ch if ch == "\n" or ch.isprintable() or ch == " "
                   else (chr(0x2400 + ord(ch)) if ord(ch) < 0x20 else "\ufffd") for ch in str(value))
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return f"{fence}text\n{text}\n{fence}"


def format_shape(shape: tuple | list) -> str:
    items = [str(x) for x in shape]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def environment(*reports: Report) -> jinja2.Environment:
    """Generic templates by name; each of ``reports``' own as "<report key>/<name>" (from its ``templates`` folder)."""
    return _environment(tuple((report.key, report.templates) for report in reports if report.templates is not None))


class LackingUndefined(jinja2.StrictUndefined):
    """StrictUndefined, except that an entry a ``Lacking`` collection lacks (a fact a traced run does not know, a
    tensor its page did not capture) raises the ``NotCheckable`` that says why, so the text that read it falls back."""

    __slots__ = ()

    def __init__(self, hint: str | None = None, obj: Any = jinja2.utils.missing, name: str | None = None,
                 exc: type[jinja2.TemplateRuntimeError] = jinja2.UndefinedError) -> None:
        if isinstance(obj, Lacking) and name is not None:  # as a plain NotCheckable: a LookupError Jinja would swallow
            lack = obj.lack(name)

            def not_checkable(_message: str | None) -> NotCheckable:
                return NotCheckable(lack.missing, lack.why)

            # Jinja only calls exc(message) to make what it raises: a factory serves, where its stub asks for a class
            super().__init__(hint, obj, name, not_checkable)  # type: ignore[arg-type]
        else:
            super().__init__(hint, obj, name, exc)


@cache
def _environment(folders: tuple[tuple[str, Path], ...]) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader([
            jinja2.FileSystemLoader(TEMPLATES),
            jinja2.PrefixLoader({key: jinja2.FileSystemLoader(folder) for key, folder in folders}),
        ]),
        undefined=LackingUndefined,
        autoescape=False,  # output is Markdown; user text goes through the `text` filter
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        f=lambda v, d=4: fmt(v, d),
        text=escape_text,
        text_with_code=text_with_code,
        plural=lambda n, word, many=None: plural(int(n), word, many),
        shape=format_shape,
        pct=lambda v, d=1: f"{100 * float(v):.{d}f}%",
        literal_block=literal_block,
        thousands=lambda v: f"{int(v):,}",
        code=code,
        name=name_code,  # a name of the user's: breaks only after its separators
        fence_title=fence_title,
        infinities_blocked=infinities_blocked,
    )
    env.globals["explore"] = explore_info  # _explore.md.j2: data files, explorer and value browser of a page
    return use_template_cache(env)  # compiled once, not in every process (generator/template_cache.py)


def infinities_blocked(view: TensorView) -> int:
    """How many entries an additive mask of 0 (allowed) and −∞ (blocked) blocks, for text that describes that form.
    A
    traced mask in another form (boolean, −1e9) passes its check but is not what such text says: NotCheckable, so the
    block falls back naming the form it needs."""
    from transformer_trace.sources import NotCheckable

    t = view.tensor
    needed = "a mask of 0 and −∞ (the form the catalogue's model adds to the scores)"
    if t.dtype == torch.bool:
        raise NotCheckable(needed, "yours is boolean")
    blocked = int(torch.isneginf(t).sum())
    if blocked + int((t == 0).sum()) != t.numel():
        raise NotCheckable(needed, f"yours holds other values, from {fmt(float(t.min()))} to {fmt(float(t.max()))}")
    return blocked


# ----------------------------------------------------------------------------- page data


def expected_shape(run: ModelRun, named: tuple[str, ...]) -> tuple[int, ...]:
    return tuple(parse_dimension(expression, run.dims) for expression in named)


def named_shape(run: ModelRun, snap: Snapshot) -> tuple[str, ...]:
    """What the page expects of its first tensor: the snapshot's own shape (a slice), else the model's declaration."""
    if snap.shape is not None:
        return snap.shape
    name = run.name(snap.main)
    if name not in run.declared:
        raise ValueError(f"snapshot {snap.number}: {name} is not a declared record point of the model, "
                         "and the snapshot gives no shape")
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
    """The pages of a model run, from its recording (by the one page builder, generator/pages.py)."""
    return snapshot_pages(report, partial(recorded_contents, report, run))


def recorded_contents(report: Report, run: ModelRun, snap: Snapshot) -> PageContents:
    """What the page of ``snap`` shows of a model run: its recorded tensors, their source lines, its checks' results."""
    sections = []
    for i, name in enumerate(snap.tensors):
        index = snap.index if i == 0 else None
        view = run.tensor_view(name, index)
        file, line = run.source(name)
        slice_index, slice_text = view.slice_text(whole=report.whole_values)
        sections.append(TensorSection(
            name=run.name(name), shown=view, index=index, device=run.device,
            source=source_excerpt(file, line), slice_index=slice_index, slice_text=slice_text,
            variable=snap.variable.split(", ")[i] if len(snap.tensors) > 1 else snap.variable,
        ))
    named = named_shape(run, snap)
    return PageContents(tensors=tuple(sections), record=sections[0].name, named_shape=named,
                        expected_shape=expected_shape(run, named),
                        checks=tuple(check.run(run) for check in snap.checks),
                        verdict=None, captured=True, named=(), provenance=None,
                        figures=tuple({"file": f"figures/{fid}.png", "caption": report.figure(fid).caption}
                                      for fid in snap.figures))


# ----------------------------------------------------------------------------- rendering


def report_template(report: Report, name: str, env: jinja2.Environment | None = None) -> jinja2.Template | None:
    """The report's own template ``name`` (explain/inputs/questions.md.j2), or None while it has none."""
    try:
        return (env or environment(report)).get_template(f"{report.key}/{name}")
    except jinja2.TemplateNotFound:
        return None


def render_block(template: jinja2.Template | None, block: str, context: Mapping[str, Any],
                 **shown: Any) -> str | None:
    """One block of a report template that extends _select.md.j2, rendered with ``context`` and ``shown`` (a page's
    own: the page, its tensor), or None when the template or block is missing."""
    if template is None or block not in template.blocks:
        return None
    return template.render(block=block, **context, **shown).strip()


def missing_blocks(report: Report) -> list[str]:
    """What falls back to generic text: each snapshot without its block s<n> in explain.md.j2, each question without
    q<n> (its answer) or q<n>_short (its one-line answer on the snapshot pages) in questions.md.j2."""
    explanations, questions = report_template(report, "explain.md.j2"), report_template(report, "questions.md.j2")
    explained = set(explanations.blocks) if explanations else set()
    answered = set(questions.blocks) if questions else set()
    return ([f"{report.label(s.number)} (no block s{s.number} in explain.md.j2)" for s in report.snapshots
             if f"s{s.number}" not in explained]
            + [f"question {q.number} (no block {block} in questions.md.j2)" for q in report.questions
               for block in (f"q{q.number}", f"q{q.number}_short") if block not in answered])


def render_report(report: Report, run: ModelRun, out_dir: Path, order: int = 0) -> list[SnapshotPage]:
    """Write the report's pages and snapshots.json under ``out_dir`` (figures are separate); ``order``: its place
    among the site's reports (the MkDocs plugin's navigation follows it).

    A report without its own explanation or question templates still renders: generic text
    stands in (_fallback_explain.md.j2), so a new report shows its pages at once; the build warns,
    naming each snapshot and question that falls back.
    """
    if missing := missing_blocks(report):
        log.warning("%s: generic text stands in for %d explanations or answers: %s", report.key, len(missing),
                    "; ".join(missing))
    pages = build_pages(report, run)
    extra = write_pages(report, run, pages, out_dir)
    write_snapshots_json(out_dir, snapshots_json(identity(report, order), report, run, pages, extra_pages=extra))
    return pages


def _written(run: ModelRun, template: jinja2.Template | None, block: str, context: Mapping[str, Any],
             fallback: Callable[[str | None], str], **shown: Any) -> str:
    """Block ``block`` of the report's ``template`` rendered with ``context`` (the writer's one context, made once) and
    ``shown`` (a page's explanation's: the page, its tensor ``x``, or why it cannot be read so); else
    ``fallback(needs)``: needs is None where the report has no such block, else what the block needed that the run
    lacks, read from the exception (a tensor not captured, an input a traced script does not know, an entry the user's
    tensor does not have). Only a run without a model lacks such things (a traced script's): in a model run, a block
    that needs what the run lacks is a bug and is raised; so is any exception other than the project's own "not here"
    (``NotCheckable`` and its kinds)."""
    try:
        for value in shown.values():
            if isinstance(value, NotCheckable):  # what the block would read, and the run lacks
                raise value
        return render_block(template, block, context, **shown) or fallback(None)
    except NotCheckable as exc:
        if run.model is not None:
            raise
        return fallback(exc.needed)


RUN_COLUMNS = (Column("#", "link"), Column("Title", "title"), Column("Shape", "shape"), Column("Check", "verdict"))


def run_overview(report: Report, run: ModelRun) -> Overview:
    """What a model run's overview shows beyond its pages: its configuration, parameters, dimensions and figures."""
    return Overview(
        texts="_overview_run.md.j2", columns=RUN_COLUMNS, settings=tuple(vars(run.inputs["config"]).items()),
        parameters=tuple(run.parameter_counts()),
        dimensions=Dimensions("Named dimensions", "Shapes on every page are written with these names; for this run "
                              "they stand for:", "This run",
                              tuple((name, meaning, run.dims[name]) for name, meaning in report.dims_legend.items())),
        glance=tuple({"file": f"figures/{fid}.png", "caption": report.figure(fid).caption}
                     for fid in report.overview_figures))


def write_pages(report: Report, run: ModelRun, pages: Sequence[SnapshotPage], out_dir: Path,
                overview: Overview | None = None, title: str | None = None) -> list[dict[str, Any]]:
    """Write the snapshot pages, stage pages, overview, extra pages, guiding questions and print view of ``pages``
    (returns the extra pages' entries for snapshots.json).

    One set of templates for every run: our models' (generator/run.py ``ModelRun``) and a traced script's (the same
    class, built at the trace's boundary, trace/reading/run.py), whose pages say what they show (captured or not, the
    user's variable and marked line, the layout) in their own fields. ``overview``: what the overview shows beyond the
    pages (generator/pages.py ``Overview``; a traced script's: trace/reading/run.py ``trace_overview``), by default
    a model run's (``run_overview``); ``title`` the report's title as Markdown (a trace's names its script). The
    report's own explanation and answer blocks render against either; a block that needs what the run lacks falls
    back, for that block alone, to generic text with the run's numbers saying what it would need.
    """
    env = environment(report)
    command = run.command or (command_line(report.key, run.options) if run.options is not None
                              else f"python -m transformer_trace build --model {report.key}")
    overview = overview or run_overview(report, run)
    common = {"report": report, "run": run, "inputs": run.inputs, "dims": run.dims, "stamp": run.stamp(),
              "command": command, "outcome": overview.outcome, "title": title or report.title}
    by_number = {p.snap.number: p for p in pages}  # what the report's blocks read of each page
    blocks = {"pages": by_number, **common}  # the one context of every explanation and answer, made once
    questions = report_template(report, "questions.md.j2", env)
    explanations = _explain(report, run, pages, env, blocks)
    answer = _answerer(run, pages, questions, env, common, blocks)
    shorts = {q.number: answer(q, short=True) for q in report.questions}
    common["written"] = blocks["written"] = {page.snap.number: PageText(explanations.get(page.snap.number, ""), tuple(
        {"question": report.question(n), "short": shorts[n]} for n in page.snap.questions)) for page in pages}
    answers = {q.number: answer(q, short=False) for q in report.questions}  # these read the pages' texts too
    intro = _written(run, questions, "intro", blocks, lambda needs: "")
    by_stage = {stage.key: [p for p in pages if p.snap.stage == stage.key] for stage in report.stages}

    def write(rel: str, template: str, **context: Any) -> str:
        text = env.get_template(template).render(**common, **context)
        if rel:
            target = out_dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        return text

    for i, page in enumerate(pages):  # linked to its neighbours in the report's order
        write(page.path, "snapshot.md.j2", page=page, before=pages[i - 1] if i else None,
              after=pages[i + 1] if i + 1 < len(pages) else None)
    for stage in report.stages:
        write(f"{stage.key}/index.md", "stage.md.j2", stage=stage, pages=by_stage[stage.key])
    inputs_section = _section(run, report_template(report, "inputs.md.j2"), common)
    write("index.md", "overview.md.j2", pages=pages, by_stage=by_stage, inputs_section=inputs_section,
          overview=overview)
    extra = []
    for extra_page in report.extra_pages if run.model is not None else ():  # the rollout, training: they read the model
        checks = [check.run(run) for check in extra_page.checks]
        check = CheckResult.combined(checks)
        figures = [{"file": f"figures/{fid}.png", "caption": report.figure(fid).caption} for fid in extra_page.figures]
        body = env.get_template(f"{report.key}/{extra_page.template}").render(check=check, figures=figures,
                                                                              pages=by_number, **common)
        write(f"{extra_page.slug}.md", "extra_page.md.j2", extra=extra_page, body=body, checks=checks, figures=figures)
        extra.append({"title": extra_page.title, "page": f"{extra_page.slug}.md",
                      "check": {"name": check.name, "passed": check.passed, "detail": check.detail}})
    questions_page = write("questions.md", "questions.md.j2", pages=pages, intro=intro, answers=answers,
                           overview=overview)
    write("print.md", "print.md.j2", pages=pages, questions=shift_headings(questions_page, 1))
    return extra


def _section(run: ModelRun, template: jinja2.Template | None, context: dict[str, Any]) -> str:
    """A whole report template (its overview's inputs section) rendered, or "" where the report has none or where it
    reads what a run without a model lacks (a traced script's: its tensors, not its input's facts)."""
    try:
        return template.render(**context) if template is not None else ""
    except NotCheckable:
        if run.model is not None:
            raise
        return ""


def _refuted(page: SnapshotPage) -> bool:
    """Whether the page's check failed: the report's written words, describing the step done right, do not fit it."""
    return not page.check.passed and page.check.checkable


@dataclass(frozen=True)
class PageText:
    """What the writer renders with a snapshot's page: its explanation (a captured page's; "" where none) and the
    guiding questions it informs, each with its short answer."""

    explanation: str
    questions: tuple[dict[str, Any], ...]


def _explain(report: Report, run: ModelRun, pages: Sequence[SnapshotPage], env: jinja2.Environment,
             context: Mapping[str, Any]) -> dict[int, str]:
    """Each captured page's explanation (by snapshot number), rendered with the writer's one ``context``: the report's
    block s<n> with the run's numbers; generic text with them where the report has none, where the block needs what
    the run lacks (saying what), or where the page's check failed. What each reads of its page, its first tensor in the
    catalogue's layout (``x``), is read once for every page before any renders."""
    explanations, fallback = report_template(report, "explain.md.j2", env), env.get_template("_fallback_explain.md.j2")
    read = {page.snap.number: (page, _in_catalogue_layout(page.main)) for page in pages if page.captured}
    written: dict[int, str] = {}
    for number, (page, x) in read.items():

        def explain_fallback(needs: str | None, page: SnapshotPage = page, failed: bool = False) -> str:
            return fallback.render(**context, x=page.main.shown, page=page, needs=needs, failed=failed).strip()

        if _refuted(page):
            written[number] = explain_fallback(None, failed=True)
        else:
            written[number] = _written(run, explanations, f"s{number}", context, explain_fallback, page=page, x=x)
    return written


def _in_catalogue_layout(section: TensorSection) -> TensorView | NotCheckable:
    """A page's tensor as its report's blocks read it (``TensorSection.view``), or why it cannot be read so."""
    try:
        return section.view
    except NotCheckable as lack:
        return lack


class Answer(Protocol):
    """A guiding question's answer, in full or in one line (``short``)."""

    def __call__(self, q: Question, short: bool) -> str: ...


def _answerer(run: ModelRun, pages: Sequence[SnapshotPage], questions: jinja2.Template | None,
              env: jinja2.Environment, common: Mapping[str, Any], context: Mapping[str, Any]) -> Answer:
    """answer(question, short): the report's written answer (block q<n> or q<n>_short) rendered with the writer's one
    ``context``; where it has none, needs what the run lacks, or a snapshot informing it failed its check, the generic
    answer (what the run shows of the snapshots that inform it, with ``common``) for a run without a model, nothing for
    a model run."""
    generic = env.get_template("_fallback_answer.md.j2")

    def fallback(q: Question, short: bool, failed: Sequence[SnapshotPage] = ()) -> Callable[[str | None], str]:
        if run.model is not None:  # a model run's report has every answer written (the build warns where not)
            return lambda needs: ""
        return lambda needs: generic.render(question=q, short=short, needs=needs, failed=failed, pages=pages,
                                            **common).strip()

    def answer(q: Question, short: bool) -> str:
        failed = [p for p in pages if q.number in p.snap.questions and _refuted(p)]
        if failed:
            return fallback(q, short, failed)(None)
        block = f"q{q.number}_short" if short else f"q{q.number}"
        return _written(run, questions, block, context, fallback(q, short))

    return answer


def shift_headings(markdown: str, levels: int) -> str:
    """Demote every ATX heading outside code blocks by ``levels`` (# -> ##)."""
    lines, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        lines.append("#" * levels + line if line.startswith("#") and not fenced else line)
    return "\n".join(lines) + "\n"


def identity(report: Report, order: int = 0) -> dict[str, Any]:
    """What snapshots.json says the report is, and where the site lists it (``order``: the registry's, for the MkDocs
    plugin)."""
    return {"model": report.key, "title": report.title, "short_title": report.short_title, "order": order}
