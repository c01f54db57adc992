"""The traced run exists before any check runs (issue 39 point 3): a capture's reading becomes the run object
(trace/reading/run.py ``TracedRun``), whose ``module()`` and ``parameter()`` answer from the module calls its marked lines
made, rebuilt from their own parameters, as a bundled run's answer from its model; then every check runs on that run,
as its marked line sees it; and what the checks count is theirs, not the run's inputs."""

from __future__ import annotations

import json

import pytest
import torch

from transformer_trace.checks import Check
from transformer_trace.cli import main
from transformer_trace.sources import NoWeights, TensorDict
from transformer_trace.trace import report as trace_report
from transformer_trace.trace.reading.run import TracedRun
from tests.test_trace_derived import STUDENT_VIT


def running_classes(cls: type) -> list[type]:
    return ([cls] if "run" in vars(cls) else []) + [found for sub in cls.__subclasses__()
                                                    for found in running_classes(sub)]


def recorded_check(stages: list, run):
    def recorded(check, source):
        stages.append(("check", source))
        return run(check, source)
    return recorded


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """A student's ViT traced with its stages recorded in the order they ran: the run built, each check run (with the
    source it read), the judgements, the pages; and the run the checks were given."""
    tmp_path = tmp_path_factory.mktemp("run_first")
    script = tmp_path / "student_vit.py"
    script.write_text(STUDENT_VIT, encoding="utf-8")
    stages: list[tuple[str, object]] = []
    patch = pytest.MonkeyPatch()
    traced_run, judge, snapshot_pages = trace_report.traced_run, trace_report.judge, trace_report.snapshot_pages

    def recorded(stage, function):
        def call(*args, **kwargs):
            if stage != "run":  # as it begins: what it was given
                stages.append((stage, args[0]))
            found = function(*args, **kwargs)
            if stage == "run":  # as it ends: what it built
                stages.append((stage, found))
            return found
        return call

    patch.setattr(trace_report, "traced_run", recorded("run", traced_run))
    patch.setattr(trace_report, "judge", recorded("judgements", judge))
    patch.setattr(trace_report, "snapshot_pages", recorded("pages", snapshot_pages))
    for cls in running_classes(Check):  # each class with a run of its own (a residual sum read from a call)
        patch.setattr(cls, "run", recorded_check(stages, cls.run))
    try:
        code = main(["trace", str(script), "--out", str(tmp_path / "out"), "--name", "t", "-q"])
    finally:
        patch.undo()
    data = json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))
    (run,) = [found for stage, found in stages if stage == "run"]
    return code, stages, run, data, (tmp_path / "out" / "t" / "print.md").read_text(encoding="utf-8")


def test_the_run_is_built_before_any_check_runs_and_the_pages_after_the_judgements(traced):
    code, stages, run, _, _ = traced
    assert code == 0
    order = [stage for stage, _ in stages]
    assert "check" in order
    assert order.index("run") < order.index("judgements") < order.index("check")  # no check before the run
    assert max(i for i, stage in enumerate(order) if stage == "check") < order.index("pages")
    assert [found for stage, found in stages if stage == "judgements"] == [run]


def test_every_check_runs_on_the_traced_run_as_its_marked_line_sees_it(traced):
    _, stages, run, _, _ = traced
    sources = [source for stage, source in stages if stage == "check"]
    assert len(sources) >= 2  # S15's projection and S19's residual sum at least
    assert all(isinstance(source, TensorDict) and source.run is run for source in sources)


def test_the_traced_run_answers_module_and_parameter_from_the_module_calls_its_marked_lines_made(traced):
    _, _, run, data, _ = traced
    assert isinstance(run, TracedRun) and run.model is None
    projections = {name: module for name, module in run.called.items() if getattr(module, "weight", None) is not None}
    assert projections, "the Projection the attention's marked line called is rebuilt from its own parameters"
    for name, module in projections.items():
        assert run.module(name) is module
        assert torch.equal(run.parameter(f"{name}.weight"), module.weight.detach().double().cpu())
        assert run.seen_from({}, run.places).module(name) is module  # a line's view reads the run's modules
    with pytest.raises(NoWeights, match="a trace captures tensors, not the model's weights"):
        run.module("a.module.no.line.called")
    with pytest.raises(NoWeights):
        run.parameter("pos_embedding")
    (s15,) = [snap for snap in data["snapshots"] if snap["label"] == "S15"]
    assert s15["check"]["passed"] is True and "the weights of the Projection it called" in s15["check"]["detail"]


def test_the_check_counts_are_the_judgements_not_the_run_inputs(traced):
    _, _, run, data, print_view = traced
    assert [label for label, _ in run.inputs["facts"]] == ["Script", "Captured"]
    counts = data["outcome"]["counts"]
    checks = (f"{counts['passed']} passed, {counts['failed']} failed, {counts['unrecognised']} unrecognised, "
              f"{counts['unchecked']} not checkable")
    assert data["facts"][-1] == ["Checks", checks]  # snapshots.json's facts: the run's, then the checks'
    assert [label for label, _ in data["facts"]] == ["Script", "Captured", "Checks"]
    assert f"| Checks | {checks} |" in print_view


def test_a_captured_tensor_is_converted_to_float64_once_whichever_check_reads_it(traced):
    """The run owns each captured tensor's float64 copy (sources.Float64Copies): every view of it a check reads, and
    the run itself, hand that one copy, made the first time one asked."""
    _, stages, run, _, _ = traced
    sources = [source for stage, source in stages if stage == "check"]
    assert all(source.float64 is run.float64 for source in sources)
    read = [(source, name) for source in sources for name, tensor in source.tensors.items()
            if tensor is run.catalogued.tensors.get(name)]
    assert read, "the checks read the run's own captured tensors"
    for source, name in read:
        assert source.t(name) is run.t(name) and source.t(name).dtype == torch.float64
