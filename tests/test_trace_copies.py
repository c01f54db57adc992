"""What the traced script's interpreter copies, and what it keeps by reference (issue 29 point 7: the tracer's cost):
the same memory read twice is copied once, whichever tensor views it, and never once it changed; a Linear's or
LayerNorm's parameters in a forward pass without gradients are written from the parameter itself, and never as values
they took after the call (an optimizer's step, an in-place change, a change through ``.data``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

from transformer_trace.cli import main
from transformer_trace.reports import REPORTS
from transformer_trace.trace import numberings
from transformer_trace.trace.child import bootstrap, protocol
from transformer_trace.trace.child.protocol import ModuleKind
from transformer_trace.trace.reading.capture import CAPTURE_BUDGET_BYTES, _call, Arrays, ModuleCall, run_script
from transformer_trace.trace.reading.user_files import user_files
from transformer_trace.trace.markers import scan

copies = bootstrap._beside("copies.py")


def hits_of(tmp_path: Path, source: str) -> dict[str, list]:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source), encoding="utf-8")
    capture = run_script(script, [], scan(user_files(script), numberings(REPORTS)), 60, argv0=str(script))
    assert capture.finished, capture.error
    return {marker.text: found for marker, found in capture.hits.items()}


def test_a_lines_value_that_views_its_module_calls_output_shares_that_copy_in_its_own_shape(tmp_path):
    hits = hits_of(tmp_path, """\
        import torch
        from torch import nn
        torch.manual_seed(0)
        lin = nn.Linear(4, 6)
        with torch.no_grad():
            heads = lin(torch.randn(2, 4)).view(2, 2, 3)  # BREAKPOINT S25
    """)
    [hit] = hits["BREAKPOINT S25"]
    [heads], [call] = hit.values, hit.calls
    assert heads.tensor.shape == (2, 2, 3) and torch.equal(heads.tensor.reshape(2, 6), call.outputs[0])


@pytest.mark.parametrize("change", ["w.mul_(2)", "w.data.mul_(2)", "w.numpy()[:] *= 2"])
def test_a_later_lines_read_of_memory_changed_in_place_is_copied_anew_even_without_a_version_change(tmp_path, change):
    """Through ``.data`` or NumPy an in-place change moves no version counter: copies are recognised only while one
    marked statement runs."""
    hits = hits_of(tmp_path, f"""\
        import torch
        w = torch.ones(3)
        for step in range(3):
            cur = w  # trace: cur
            with torch.no_grad():
                {change}
    """)
    assert [hit.values[0].tensor.tolist() for hit in hits["# trace: cur"]] == [[1.0] * 3, [2.0] * 3, [4.0] * 3]


def test_a_negated_view_of_the_same_memory_is_not_taken_for_it(tmp_path):
    hits = hits_of(tmp_path, """\
        import torch
        z = torch.tensor([1 + 2j])
        a = z.imag  # trace: a
        b = z.conj().imag  # trace: b
    """)
    [[a]], [[b]] = ([hit.values for hit in hits[f"# trace: {name}"]] for name in ("a", "b"))
    assert a.tensor.tolist() == [2.0] and b.tensor.tolist() == [-2.0]


class Recorded:
    """A Results with one Linear weight kept by reference, as module_calls.py keeps it, and what was written of it."""

    def __init__(self, folder: Path):
        self.results = bootstrap.Results(str(folder), CAPTURE_BUDGET_BYTES)
        self.folder = folder
        torch.manual_seed(0)
        self.layer = nn.Linear(4, 4)
        self.before = self.layer.weight.detach().clone()
        with self.results.lock, torch.no_grad():
            self.value = copies.live_value(self.results, "param", self.layer.weight, torch)
            self.results.event(protocol.param_to_serializable(0, self.value))

    def written(self) -> torch.Tensor | None:
        self.results.flush()
        described = self.value["array"]
        if described.get("changed"):
            return None
        data = (self.folder / "tensors.bin").read_bytes()
        return torch.frombuffer(bytearray(data), dtype=torch.float32, count=16,
                                offset=described["offset"]).reshape(4, 4)


def test_a_weight_kept_by_reference_is_written_as_it_was_before_an_optimizers_step(tmp_path):
    recorded = Recorded(tmp_path)
    recorded.layer(torch.randn(3, 4)).sum().backward()
    torch.optim.SGD(recorded.layer.parameters(), lr=1.0).step()
    assert not torch.equal(recorded.layer.weight.detach(), recorded.before)
    assert torch.equal(recorded.written(), recorded.before)


@pytest.mark.parametrize("change", ["in place", "replaced"])
def test_a_weight_kept_by_reference_that_changed_before_it_was_written_is_written_as_changed(tmp_path, change):
    recorded = Recorded(tmp_path)
    with torch.no_grad():
        if change == "in place":
            recorded.layer.weight.add_(1.0)
        else:
            recorded.layer.weight.data = torch.zeros(4, 4)
    assert recorded.written() is None


def test_unchanged_a_weight_kept_by_reference_is_written_as_it_is(tmp_path):
    recorded = Recorded(tmp_path)
    assert torch.equal(recorded.written(), recorded.before)


def linear_call(weight: torch.Tensor, x: torch.Tensor, y: torch.Tensor, live: bool) -> ModuleCall:
    """A recorded Linear call as the events name it: its input, output and weight by their arrays in ``data``."""
    data = bytearray()

    def array(t: torch.Tensor) -> dict:
        offset = len(data)
        data.extend(t.contiguous().numpy().tobytes())
        return {"name": "t", "kind": "tensor", "device": "cpu", "note": "",
                "array": {"dtype": "torch.float32", "shape": list(t.shape), "offset": offset, "nbytes": t.nbytes}}

    params = {0: (weight, live)}
    call = protocol.call_to_serializable("Linear", ModuleKind.LINEAR, 1, [array(x)], [array(y)], {"weight": 0}, {})
    return _call(protocol.call_from_serializable(call), Arrays(bytes(data)), params)


@pytest.mark.parametrize("live", [True, False])
def test_weights_written_after_the_call_that_no_longer_give_its_output_are_never_read(live):
    """A change through ``.data`` moves no version counter: a weight kept by reference that does not reproduce its
    call's output is read by no check (the call's kind "changed"); a weight copied as the call ran is the one it
    used."""
    torch.manual_seed(0)
    x, weight = torch.randn(3, 4), torch.randn(5, 4)
    y = x @ weight.T
    assert linear_call(weight, x, y, live).kind == "linear"
    changed = linear_call(weight + 0.01, x, y, live)
    assert changed.kind == ("changed" if live else "linear")
    assert changed.params == ({} if live else {"weight": changed.params["weight"]})


def test_tensors_made_under_inference_mode_which_have_no_version_counter_are_copied(tmp_path):
    hits = hits_of(tmp_path, """\
        import torch
        from torch import nn
        torch.manual_seed(0)
        lin = nn.Linear(4, 6)
        with torch.inference_mode():
            y = lin(torch.randn(2, 4))  # trace: y
            heads = y.view(2, 2, 3)  # trace: heads
    """)
    [[y]], [[heads]] = ([hit.values for hit in hits[f"# trace: {name}"]] for name in ("y", "heads"))
    assert y.tensor is not None and torch.equal(heads.tensor.reshape(2, 6), y.tensor)
    [[call]] = [hit.calls for hit in hits["# trace: y"]]
    assert call.kind == "linear" and torch.allclose(torch.nn.functional.linear(call.inputs[0], call.params["weight"],
                                                                               call.params["bias"]), y.tensor)


@pytest.mark.parametrize("change", [
    "head.weight.data.mul_(0.5)",  # no version change; the rows the first inputs feed are zero
    "head.weight.data = head.weight.data[:3]; head.bias.data = head.bias.data[:3]",  # smaller, same pointer
])
def test_weights_changed_after_the_call_never_fail_correct_code_nor_spoil_later_captures(tmp_path, change):
    script = tmp_path / "head.py"
    script.write_text(textwrap.dedent(f"""\
        import torch, torch.nn as nn
        torch.manual_seed(0)
        head = nn.Linear(8, 5)
        x = torch.randn(128, 8)
        x[:64] = 0
        with torch.no_grad():
            cls_rep = x.clone()  # BREAKPOINT S24
            logits = head(cls_rep)  # BREAKPOINT S25
        {change}
        later = torch.arange(6.0)  # trace: later
    """), encoding="utf-8")
    assert main(["trace", str(script), "--report", "vit", "--out", str(tmp_path / "out"), "--name", "t", "-q"]) == 0
    import numpy as np
    assert np.load(tmp_path / "out" / "t" / "data" / "hit1_later_later.npy").tolist() == list(range(6))


@pytest.mark.parametrize("change", ["h.data.mul_(0)", "h.numpy()[:] *= 0"])
def test_a_copy_is_recognised_only_within_the_statement_that_made_it_nested_marked_statements_included(tmp_path, change):
    """A marked call whose inner lines are marked too: the inner value changed through ``.data`` (no version change)
    and captured again is copied anew, not read from the first capture's copy while the outer statement runs."""
    hits = hits_of(tmp_path, f"""\
        import torch
        from torch import nn
        torch.manual_seed(0)
        head = nn.Linear(4, 5)
        def body(x):
            h = x * 2
            first = h  # trace: first
            with torch.no_grad():
                {change}
            second = h  # trace: second
            return head(h)
        with torch.no_grad():
            logits = body(torch.ones(2, 4))  # BREAKPOINT G26
    """)
    [first], [second] = hits["# trace: first"], hits["# trace: second"]
    assert first.values[0].tensor.tolist() == [[2.0] * 4] * 2 and second.values[0].tensor.tolist() == [[0.0] * 4] * 2


module_calls = bootstrap._beside("module_calls.py")
fed_calls = bootstrap._beside("fed_calls.py")
user_modules = bootstrap._beside("user_modules.py")
GLOBAL_HOOKS = torch.nn.modules.module._global_forward_hooks


def _statement_markers() -> list:
    """One marked statement whose checks read every kind of module call, and no local."""
    return [(0, {"locals": [], "calls": None, "reads": []})]


def test_the_module_hooks_are_in_torchs_tables_only_while_a_statement_reading_calls_runs_and_record_each_time(
        tmp_path):
    """The recorder puts its hooks back into torch's global tables for each such statement (registered once, not once a
    statement): a module called between two statements runs without them, one called in either is recorded."""
    recorder = module_calls.CallRecorder(bootstrap.Results(str(tmp_path), CAPTURE_BUDGET_BYTES), str(tmp_path), copies,
                                         fed_calls, user_modules)
    layer, markers, before = nn.Linear(3, 2), _statement_markers(), dict(GLOBAL_HOOKS)
    recorded = []
    for _ in range(3):
        recorder.start(None, markers)
        assert set(GLOBAL_HOOKS) - set(before)
        layer(torch.randn(1, 3))
        recorded.append(recorder.stop())
        assert GLOBAL_HOOKS == before
    assert [[call["kind"] for call in calls] for calls in recorded] == [[ModuleKind.LINEAR]] * 3


def test_a_flush_writes_small_arrays_together_and_a_large_one_whole_each_at_its_aligned_offset(tmp_path):
    results = bootstrap.Results(str(tmp_path), CAPTURE_BUDGET_BYTES)
    module = bootstrap._beside("results.py")
    tensors = [torch.arange(3.0), torch.randn(module.GATHERED // 4 + 5), torch.arange(7, dtype=torch.float64)]
    with results.lock:
        values = [copies.tensor_value(results, f"t{i}", t, torch) for i, t in enumerate(tensors)]
        results.event({"kind": "test", "values": values})
    results.flush()
    data = (tmp_path / "tensors.bin").read_bytes()
    for value, tensor in zip(values, tensors):
        offset = value["array"]["offset"]
        assert offset % module.ALIGN == 0
        read = torch.frombuffer(bytearray(data), dtype=tensor.dtype, count=tensor.numel(), offset=offset)
        assert torch.equal(read, tensor)
    assert (tmp_path / "events.jsonl").read_text().count("\n") == 2  # the version's line and the event's
