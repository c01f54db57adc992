"""The module calls of the unmarked statements feeding a marked one, in the traced script's interpreter
(trace/child/fed_calls.py): kept by reference as they run, and copied at the marked statement's start only where a
local tensor the marked line reads holds a call's output, as it is or rearranged (what the reader keeps,
reading/feeders.py ``as_read``); a call whose tensors changed in place in between is left out, never copied as they
are now."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from transformer_trace.trace.child import bootstrap
from transformer_trace.trace.child.protocol import FED_AT, ModuleKind
from transformer_trace.trace.reading.capture import CAPTURE_BUDGET_BYTES

copies = bootstrap._beside("copies.py")
module_calls = bootstrap._beside("module_calls.py")
fed_calls = bootstrap._beside("fed_calls.py")
user_modules = bootstrap._beside("user_modules.py")
FEEDER_LINE = 7


def _marked(local_names: list[str], traced: list[int]) -> list:
    """A marked statement's markers whose checks read every kind of call and the locals ``local_names``, fed by
    statements of which those at lines ``traced`` were traced back to (reading/feeders.py ``traced_back``)."""
    return [(0, {"locals": local_names, "calls": None, "reads": [], "traced": traced})]


class _Frame:
    """What ``CallRecorder.start`` reads of the marked statement's frame: its locals."""

    def __init__(self, **scope: object) -> None:
        self.f_locals = scope


def _fed_then_marked(tmp_path, layer: nn.Module, feed: torch.Tensor, local, change=None, traced=()) -> list[dict]:
    """The calls a marked statement reading ``local`` (computed from the feeding call's output) starts with, after an
    unmarked statement fed it ``layer(feed)``; ``change``: what runs on that output in between."""
    results = bootstrap.Results(str(tmp_path), CAPTURE_BUDGET_BYTES)
    recorder = module_calls.CallRecorder(results, str(tmp_path), copies, fed_calls, user_modules)
    marked = _marked(["h"], list(traced))
    feeding = [(0, {**marked[0][1], "locals": []})]
    recorder.start(None, feeding, feeding=True)
    output = layer(feed)
    fed = recorder.stop()
    recorder.fed[id(marked)] = {FEEDER_LINE: fed}
    if change is not None:
        change(output, feed)
    recorder.start(_Frame(h=local(output)), marked)
    return recorder.stop()


@pytest.mark.parametrize("local, traced, kept", [
    (lambda out: out, (), True),  # `h = self.proj(x)`, then the marked line reads h
    (lambda out: out.clone(), (), True),  # the same values in another tensor
    # rearranged (a cache written and read back): kept where the statement was traced back to, as the reader keeps it
    (lambda out: out.transpose(0, 1).contiguous(), (FEEDER_LINE,), True),
    (lambda out: out.transpose(0, 1).contiguous(), (), False),
    (lambda out: out * 2, (FEEDER_LINE,), False),  # changed before the line read it
    (lambda out: torch.zeros(3), (), False),  # another tensor altogether
])
def test_a_feeding_call_is_copied_only_where_a_local_the_line_reads_holds_its_output(tmp_path, local, traced, kept):
    torch.manual_seed(0)
    calls = _fed_then_marked(tmp_path, nn.Linear(4, 4), torch.randn(2, 4), local, traced=traced)
    fed = [call for call in calls if FED_AT in call["attrs"]]
    assert [call["kind"] for call in calls if call["kind"] == ModuleKind.LOCAL] == [ModuleKind.LOCAL]
    assert [(call["kind"], call["attrs"][FED_AT]) for call in fed] == ([(ModuleKind.LINEAR, FEEDER_LINE)] if kept
                                                                      else [])
    assert calls[:len(fed)] == fed  # the fed calls come first, as the feeding statement ran first


@pytest.mark.parametrize("change", [
    lambda out, feed: feed.add_(1),  # its input changed in place after the call
    lambda out, feed: out.mul_(1),  # its output written in place (the same values, a new version)
])
def test_a_feeding_call_whose_tensors_changed_before_the_marked_line_is_left_out(tmp_path, change):
    torch.manual_seed(0)
    calls = _fed_then_marked(tmp_path, nn.Linear(4, 4), torch.randn(2, 4), lambda out: out, change)
    assert not [call for call in calls if FED_AT in call["attrs"]]


def test_a_kept_feeding_call_carries_its_input_output_and_parameters_as_a_marked_lines_call_does(tmp_path):
    torch.manual_seed(0)
    layer, feed = nn.Linear(4, 4), torch.randn(2, 4)
    with torch.no_grad():
        [call] = [c for c in _fed_then_marked(tmp_path, layer, feed, lambda out: out) if FED_AT in c["attrs"]]
    assert [value["array"]["shape"] for value in call["inputs"] + call["outputs"]] == [[2, 4], [2, 4]]
    assert set(call["params"]) == {"weight", "bias"}


@pytest.mark.parametrize("layers", [1, 4])
def test_a_feeding_statement_whose_calls_no_local_holds_copies_none_of_them(tmp_path, layers):
    """Its calls (``layers`` Linears, a Sequential's) held by reference as it ran, forgotten at the marked line's
    start: no call, parameter or tensor of theirs written, only the local the line read taken from the budget."""
    torch.manual_seed(0)
    results = bootstrap.Results(str(tmp_path), CAPTURE_BUDGET_BYTES)
    recorder = module_calls.CallRecorder(results, str(tmp_path), copies, fed_calls, user_modules)
    marked = _marked(["h"], [])
    feeding = [(0, {**marked[0][1], "locals": []})]
    recorder.start(None, feeding, feeding=True)
    nn.Sequential(*(nn.Linear(4, 4) for _ in range(layers)))(torch.randn(2, 4))
    fed = recorder.stop()
    assert [(call.kind, call.depth) for call in fed] == [(ModuleKind.LINEAR, 2)] * layers  # by reference, uncopied
    assert results.budget_left == CAPTURE_BUDGET_BYTES and not results.pending
    recorder.fed[id(marked)] = {FEEDER_LINE: fed}
    local = torch.zeros(3)
    recorder.start(_Frame(h=local), marked)
    calls = recorder.stop()
    assert [call["kind"] for call in calls] == [ModuleKind.LOCAL]
    assert not results.pending  # no parameter event: none of the feeding calls' weights was written
    assert CAPTURE_BUDGET_BYTES - results.budget_left == local.nbytes


def _sorted_values_match(output: torch.Tensor, tensor: torch.Tensor) -> bool:
    """The rule ``_Held`` applies to a traced-back call's output (reading/feeders.py ``_rearranged``): the same values
    in another order, not one value throughout."""
    values = output.flatten().sort().values
    return bool(values[0] != values[-1]) and torch.equal(values, tensor.flatten().sort().values)


NAN = float("nan")


@pytest.mark.parametrize("output, tensor", [
    (torch.tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([[4.0, 2.0], [3.0, 1.0]])),  # rearranged
    (torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.5, 3.0])),  # same bounds, another value between
    (torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0.0, 2.0, 3.0])),  # another least value
    (torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 5.0])),  # another greatest value
    (torch.tensor([2.0, 2.0]), torch.tensor([2.0, 2.0])),  # one value throughout
    (torch.tensor([1.0, NAN]), torch.tensor([NAN, 1.0])),  # a NaN: never equal
    (torch.tensor([1.0, 2.0]), torch.tensor([NAN, 1.0])),
    (torch.tensor([-0.0, 1.0]), torch.tensor([1.0, 0.0])),  # -0.0 == 0.0: the sort decides
    (torch.tensor([1, 3, 2]), torch.tensor([3, 2, 1])),  # integers
    (torch.tensor([1.0, 3.0], dtype=torch.bfloat16), torch.tensor([3.0, 1.0], dtype=torch.bfloat16)),
    (torch.tensor([True, False]), torch.tensor([False, True])),  # no bounds for bool: the sort decides
])
def test_a_rearranged_output_is_found_as_the_sort_finds_it(output, tensor):
    """The least and greatest values, compared first, only spare the sort where it could not match."""
    held = fed_calls._Held([tensor], torch)
    assert held._rearranged(output, tensor) is _sorted_values_match(output, tensor)


def _sorts(function, *args):
    """``function(*args)`` and the tensor sorts it ran."""
    sorts = [0]

    def count(frame, event, arg):
        if event == "c_call" and getattr(arg, "__name__", None) == "sort":
            sorts[0] += 1
    sys.setprofile(count)
    try:
        found = function(*args)
    finally:
        sys.setprofile(None)
    return found, sorts[0]


@pytest.mark.parametrize("output, view", [
    (torch.tensor([[1.0, 2.0], [3.0, 4.0]]), lambda out: out.view(4)),  # `keys = keys.view(b, t, h, s)`
    (torch.tensor([[1.0, 2.0], [3.0, 4.0]]), lambda out: out.view(1, 2, 2)),
    (torch.tensor([[2.0, 2.0], [2.0, 2.0]]), lambda out: out.view(4)),  # one value throughout: not told apart
    (torch.tensor([[1.0, NAN], [3.0, 4.0]]), lambda out: out.view(4)),  # a NaN: never equal
])
def test_a_view_of_a_feeding_calls_output_is_found_rearranged_without_a_sort(output, view):
    """A local that reads the output's memory in its order (a view) holds its values as they are: the sort that
    compares a rearranged copy is not needed, the answer is the sort's."""
    tensor = view(output)
    held = fed_calls._Held([tensor], torch)
    found, sorts = _sorts(held._rearranged, output, tensor)
    assert found is _sorted_values_match(output, tensor) and sorts == 0


@pytest.mark.parametrize("output, view", [
    (torch.tensor([[1.0, 2.0], [3.0, 4.0]]), lambda out: out.t()),  # the same memory in another order
    (torch.tensor([[True, False], [False, True]]), lambda out: out.view(4)),  # no bounds for bool
    (torch.tensor([1.0, 2.0, 3.0, 4.0]), lambda out: out[:2].view(2)),  # part of its memory
])
def test_a_tensor_sharing_a_feeding_calls_memory_otherwise_is_compared_as_before(output, view):
    tensor = view(output)
    held = fed_calls._Held([tensor], torch)
    assert held._rearranged(output, tensor) is _sorted_values_match(output, tensor)


def _calls_of_ours(function) -> int:
    """The calls (Python and built-in) made from the child's own code while ``function()`` runs."""
    counted, child = [0], str(Path(fed_calls.__file__).parent)

    def count(frame, event, arg):
        if event in ("call", "c_call") and frame.f_code.co_filename.startswith(child):
            counted[0] += 1
    sys.setprofile(count)
    try:
        function()
    finally:
        sys.setprofile(None)
    return counted[0]


def test_a_feeding_statements_module_call_is_kept_at_a_few_calls_of_ours(tmp_path):
    """What the trace pays for each call a feeding statement makes (most are never copied): the hook's test of its
    kind, its parameters and tensors stamped by reference, without a comprehension or a test per parameter."""
    results = bootstrap.Results(str(tmp_path), CAPTURE_BUDGET_BYTES)
    recorder = module_calls.CallRecorder(results, str(tmp_path), copies, fed_calls, user_modules)
    feeding = [(0, {**_marked(["h"], [])[0][1], "locals": []})]
    layers, feed = nn.Sequential(*(nn.Linear(4, 4) for _ in range(8))), torch.randn(2, 4)

    def statement():
        recorder.start(None, feeding, feeding=True)
        layers(feed)
        assert len(recorder.stop()) == 8

    statement()  # the classes' answers kept for the run
    assert _calls_of_ours(statement) < 30 * 8  # 36 a call before


class _Recorder:
    """What ``Feeding`` calls of the tracer's recorder: each start and stop, in order."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.fed: dict = {}

    def start(self, frame, markers, feeding=False, targets=None, use=None) -> None:
        self.seen.append("start")

    def stop(self) -> list:
        self.seen.append("stop")
        return []


class _Tracer:
    """A tracer as ``Feeding`` reads it: is_compiling's two halves (bootstrap.Tracer.torch_imported), and is_compiling
    itself, which a feeding statement no longer calls (three frames per run of the statement)."""

    pid = 1

    def __init__(self, dynamo: bool) -> None:
        self.calls, self.dynamo = _Recorder(), lambda: dynamo
        self.compiler = type("Compiler", (), {"_is_compiling_flag": False})

    def compiling(self) -> bool:
        raise AssertionError("is_compiling called: the statement asks its two halves")


@pytest.mark.parametrize("dynamo, recorded", [(False, ["start", "stop"]), (True, [])])
def test_a_feeding_statement_asks_is_compilings_halves_as_a_marked_one_does(dynamo, recorded):
    tracer = _Tracer(dynamo)
    with fed_calls.Feeding(tracer, _marked(["h"], []), FEEDER_LINE):
        pass
    assert tracer.calls.seen == recorded  # recorded outside a compiler's trace only
