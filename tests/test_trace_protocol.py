"""The wire between the traced script's interpreter and the generator is one versioned module
(generator/trace/child/protocol.py): every event says its kind, every record the child writes reads back as the
object it stands for, and a results folder written in another version is refused with one line, never misread."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from transformer_trace.cli import main
from transformer_trace.errors import UserError
from transformer_trace.trace.child import bootstrap, protocol
from transformer_trace.trace.child.protocol import EventKind, ModuleKind, ProtocolError, ValueKind
from transformer_trace.trace.reading.capture import Capture, _read_hits
from transformer_trace.trace.reading.user_files import user_files

ARRAY = protocol.array_to_serializable("torch.float32", (2, 3), 24)
VALUE = protocol.value_to_serializable("x", ValueKind.TENSOR, "cpu", "", {**ARRAY, "offset": 0}, view=[3, 2])
CALL = protocol.call_to_serializable("Linear", ModuleKind.LINEAR, 1, [VALUE], [None], {"weight": 0}, {"eps": 1e-5})


@pytest.mark.parametrize("written, expected", [
    (protocol.seed_to_serializable(7), protocol.Seed(7)),
    (protocol.compiled_to_serializable(), protocol.Compiled()),
    (protocol.entered_to_serializable("m.py", 3, "f"), protocol.Entered("m.py", 3, "f")),
    (protocol.param_to_serializable(0, VALUE), protocol.Param(0, protocol.value_from_serializable(VALUE))),
    (protocol.hit_to_serializable(2, 5, ["m.py", 9], [VALUE], [CALL], {"self.pos": 0}),
     protocol.Hit(2, 5, ("m.py", 9), (protocol.value_from_serializable(VALUE),),
                  (protocol.call_from_serializable(CALL),), {"self.pos": 0})),
])
def test_every_event_the_child_writes_says_its_kind_and_reads_back_as_its_object(written, expected):
    line = json.dumps(written)  # as results.py writes it
    assert json.loads(line)["kind"] in set(EventKind)
    assert protocol.event_from_serializable(json.loads(line)) == expected


def test_a_value_reads_back_with_its_array_its_view_and_its_kinds_as_enum_members():
    value = protocol.value_from_serializable(json.loads(json.dumps(VALUE)))
    assert value.kind is ValueKind.TENSOR and value.view == (3, 2)
    assert value.array == protocol.Array("torch.float32", (2, 3), 0, 24)
    call = protocol.call_from_serializable(json.loads(json.dumps(CALL)))
    assert call.kind is ModuleKind.LINEAR and call.inputs == (value,) and call.outputs == (None,)


@pytest.mark.parametrize("view", [None, [3, 2]])
def test_the_childs_one_call_builders_of_a_copied_tensor_write_what_its_general_builders_write(view):
    """copies.py builds a copied CPU tensor's value in one call (the traced line's common case): the same record."""
    assert protocol.tensor_copy_to_serializable("x", "torch.float32", (2, 3), 24) == \
        protocol.value_to_serializable("x", ValueKind.TENSOR, "cpu", "", ARRAY)
    assert protocol.tensor_copy_to_serializable("x", "torch.float32", (2, 3), 24, live=True) == \
        protocol.value_to_serializable("x", ValueKind.TENSOR, "cpu", "",
                                       protocol.array_to_serializable("torch.float32", (2, 3), 24, live=True))
    assert protocol.shared_copy_to_serializable("x", ARRAY, view) == \
        protocol.value_to_serializable("x", ValueKind.TENSOR, "cpu", "", ARRAY, view=view)


@pytest.mark.parametrize("record", [
    {"kind": "telepathy"},  # a kind this version does not know
    {"seed": 3},  # the unversioned format, told apart by its keys
    {"kind": "hit", "marker": 0},  # a hit without its values
    {"kind": "protocol", "version": protocol.PROTOCOL_VERSION},  # a second header
])
def test_a_record_the_reader_does_not_know_is_refused(record):
    with pytest.raises(ProtocolError):
        protocol.event_from_serializable(record)


def test_the_child_loads_by_path_the_same_protocol_the_generator_imports():
    assert bootstrap.protocol.__file__ == protocol.__file__
    assert bootstrap.protocol.PROTOCOL_VERSION == protocol.PROTOCOL_VERSION
    assert bootstrap.protocol.ModuleKind.LINEAR == ModuleKind.LINEAR == "linear"  # both sides hash the same word


def _results(folder: Path, *records: dict) -> Path:
    folder.mkdir()
    (folder / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return folder


@pytest.mark.parametrize("header, said", [
    ({"kind": "protocol", "version": 1}, "written in protocol version 1"),
    ({"seed": 3}, "written in a format without a protocol version"),
])
def test_reading_refuses_a_results_folder_of_another_protocol_version_in_one_line(tmp_path, header, said):
    folder = _results(tmp_path / "results", header, protocol.seed_to_serializable(3))
    with pytest.raises(UserError) as refused:
        _read_hits(folder, Capture(script=tmp_path / "s.py", markers=[]))
    message = str(refused.value)
    assert said in message and f"reads version {protocol.PROTOCOL_VERSION}" in message and "\n" not in message


def test_reading_this_versions_folder_reads_its_events(tmp_path):
    folder = _results(tmp_path / "results", protocol.header(), protocol.seed_to_serializable(3),
                      protocol.compiled_to_serializable(), protocol.entered_to_serializable("s.py", 1, "<module>"))
    capture = Capture(script=tmp_path / "s.py", markers=[])
    assert _read_hits(folder, capture) == [("s.py", 1, "<module>")]
    assert capture.seeds == [3] and capture.compiled


def test_a_trace_whose_child_wrote_another_version_ends_with_one_line_and_status_2(tmp_path, capsys, monkeypatch):
    """The child loads its own protocol.py by path; the generator's, told it reads another version, refuses."""
    monkeypatch.setattr(protocol, "PROTOCOL_VERSION", protocol.PROTOCOL_VERSION + 1)
    script = tmp_path / "s.py"
    script.write_text("import torch\nx = torch.ones(2)  # trace: x\n", encoding="utf-8")
    assert main(["trace", str(script), "--out", str(tmp_path / "docs"), "--name", "t", "-q"]) == 2
    err = capsys.readouterr().err
    assert "protocol version" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "docs" / "t").exists()


def test_a_new_module_kind_is_one_enum_value_recorded_by_the_child_and_read_back(tmp_path, monkeypatch):
    """How-it-works' "teach the trace a new module kind", done for a throw-away kind: ModuleKind gains a value and
    TORCH_MODULES its PyTorch class (in a copy of the child room), the child records the call, capture reads it."""
    import importlib.util
    import shutil
    import sys

    import torch

    from transformer_trace.trace.reading import capture
    from transformer_trace.trace.markers import scan

    room = tmp_path / "child"
    shutil.copytree(Path(protocol.__file__).parent, room, ignore=shutil.ignore_patterns("__pycache__"))
    source = (room / "protocol.py").read_text(encoding="utf-8")
    source = source.replace('    USER = "user"', '    RMS_NORM = "rms_norm"\n    USER = "user"', 1)
    source = source.replace('TORCH_MODULES = {', 'TORCH_MODULES = {"RMSNorm": ModuleKind.RMS_NORM, ', 1)
    (room / "protocol.py").write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("taught_protocol", room / "protocol.py")
    taught = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "taught_protocol", taught)
    spec.loader.exec_module(taught)
    monkeypatch.setattr(capture, "protocol", taught)  # the reader of this run knows the new kind
    monkeypatch.setattr(capture, "BOOTSTRAP", room / "bootstrap.py")  # and so does its child

    script = tmp_path / "s.py"
    script.write_text("import torch\ntorch.manual_seed(0)\nnorm = torch.nn.RMSNorm(4, eps=1e-6)\n"
                      "with torch.no_grad():\n    norm.weight.mul_(3)\n"
                      "    x = torch.randn(2, 4)\n    y = norm(x)  # trace: y\n", encoding="utf-8")
    markers = scan(user_files(script), {})
    ran = capture.run_script(script, [], markers, 60, calls_for=None)
    assert ran.finished, ran.error
    [call] = [c for hits in ran.hits.values() for c in hits[0].calls]
    assert call.kind == taught.ModuleKind.RMS_NORM == "rms_norm" and call.module == "RMSNorm"
    x, y, weight = call.inputs[0], call.outputs[0], call.params["weight"]
    assert call.attrs["eps"] == 1e-6 and torch.equal(weight, torch.full((4,), 3.0))
    assert torch.allclose(y, x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight)
