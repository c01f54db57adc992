"""A capture is read once (issue 39, point 2): one function, capture_reading.py ``read``, turns what the script's run
captured into a frozen ``CaptureReading``, per record name and hit the tensor in the catalogue's layout with where it
comes from; the checks, the run, the data and the pages take what they need from it, and nothing after it reads the
capture."""

from __future__ import annotations

import ast
import dataclasses
import textwrap
from pathlib import Path

import pytest
import torch

from tests.test_pages import calls_of

GENERATOR = Path(__file__).resolve().parent.parent / "generator"


@pytest.mark.parametrize("step", ["first_forward_pass", "marked_snapshots", "read_snapshots", "every_hit"])
def test_each_step_of_reading_a_capture_is_taken_once_by_the_one_reading(step):
    assert calls_of(step) == {"trace/reading/capture_reading.py": 1}


def test_past_the_reading_no_module_names_the_capture():
    """Only the modules that make the capture (the command, the run and a notebook's translation) and the reading
    import ``Capture``; the checks, the run object, the report and the variants read the ``CaptureReading``."""
    importers = set()
    for path in GENERATOR.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.ImportFrom) and (node.module or "").endswith("trace.reading.capture")
                    and any(alias.name == "Capture" for alias in node.names)):
                importers.add(str(path.relative_to(GENERATOR)))
    assert importers == {"trace/__init__.py", "trace/notebook.py", "trace/reading/capture_reading.py",
                         "trace/reading/pages.py"}


@pytest.mark.slow
@pytest.mark.parametrize("shown", [1, 2])
def test_every_hit_of_a_looped_line_is_one_record_with_its_provenance_and_the_capture_is_left_as_it_ran(tmp_path,
                                                                                                       shown):
    """Every hit's values are records; its module calls are copied up to the hit the checks read (--hit, ``shown``)
    only, and the record shown carries that hit's calls: the second layer's Linear for --hit 2."""
    from transformer_trace.reports import REPORTS
    from transformer_trace.trace import as_traced, numberings
    from transformer_trace.trace.markers import scan
    from transformer_trace.trace.reading.capture import run_script
    from transformer_trace.trace.reading.capture_reading import read
    from transformer_trace.trace.reading.user_files import user_files

    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent("""\
        import torch
        from torch import nn
        torch.manual_seed(0)
        layers = [nn.Linear(4, 4), nn.Linear(4, 4)]
        x = torch.randn(2, 3, 4)
        for layer in layers:
            y = layer(x)  # BREAKPOINT G20
    """), encoding="utf-8")
    markers, reads = as_traced(scan(user_files(script), numberings(REPORTS)), "gpt", REPORTS, shown)
    capture = run_script(script, [], markers, 60, argv0=str(script), **reads)
    hits_before, warnings_before = {m: list(h) for m, h in capture.hits.items()}, list(capture.warnings)

    reading = read(REPORTS["gpt"], "gpt", capture, shown)

    filed = [(name, hit) for (name, hit), record in reading.records.items() if record.snapshot == "G20"]
    assert [hit for _, hit in filed] == [1, 2] and len({name for name, _ in filed}) == 2, "one record name a hit"
    for name, hit in filed:
        record = reading.records[name, hit]
        assert (record.name, record.hit, record.ran, record.file, record.marker_line) == (name, hit, 2, "script.py", 7)
        assert record.layout is not None and record.tensor.shape == (2, 3, 4) and record.cell == ""
        made = [call.kind for call in record.calls if call.kind != "local"]  # "local": a tensor the line read
        assert made == (["linear"] if hit <= shown else []), "no call copied past the hit the checks read"
        assert any(b.startswith("M = 4") for b in record.bound)
    name = filed[shown - 1][0]
    assert reading.shown[name].hit == shown and reading.source is not None
    assert reading.source.tensors[name] is reading.shown[name].tensor, "the checks read the hit shown"
    torch.manual_seed(0)
    weights = [torch.nn.Linear(4, 4).weight for _ in range(2)]  # the script's layers, made from its seed
    (linear,) = [call for call in reading.shown[name].calls if call.kind == "linear"]
    assert torch.equal(linear.params["weight"], weights[shown - 1]), "the shown hit's own layer's call"
    assert {m: list(h) for m, h in capture.hits.items()} == hits_before and capture.warnings == warnings_before
    with pytest.raises(dataclasses.FrozenInstanceError):
        reading.hit = 2  # type: ignore[misc]


SHARED_ATTENTION = """\
    import torch
    from torch import nn
    torch.manual_seed(0)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.w_q = nn.Linear(8, 8)

        def forward(self, x, memory):
            q = self.w_q(x)  # Snapshot #7 or #21 or #30
            return q + memory.mean()

    class EncoderLayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.self_attn = Attention()

        def forward(self, x):
            return self.self_attn(x, x)

    class DecoderLayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.self_attn, self.cross_attn = Attention(), Attention()

        def forward(self, y, memory):
            y = self.self_attn(y, y)
            return self.cross_attn(y, memory)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([EncoderLayer(), EncoderLayer()])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([DecoderLayer(), DecoderLayer()])

        def forward(self, y, memory):
            for layer in self.layers:
                y = layer(y, memory)
            return y

    encoder, decoder = Encoder(), Decoder()
    with torch.no_grad():
        decoder(torch.randn(2, 3, 8), encoder(torch.randn(2, 5, 8)))
"""


@pytest.mark.slow
@pytest.mark.parametrize("shown", [1, 2])
def test_a_shared_lines_calls_are_copied_up_to_the_hit_read_of_each_of_its_uses(tmp_path, shown):
    """One attention class runs the encoder's self-attention, the decoder's and the cross-attention, two layers each:
    each use's page reads its own hit ``shown`` (--hit), so the line's calls are copied at each use's hits up to that
    one and no later (the second layer's hits of every use carry none for --hit 1), while its values are taken at
    every hit."""
    from transformer_trace.reports import REPORTS
    from transformer_trace.trace import as_traced, numberings
    from transformer_trace.trace.markers import scan
    from transformer_trace.trace.reading.capture import run_script
    from transformer_trace.trace.reading.user_files import user_files

    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(SHARED_ATTENTION), encoding="utf-8")
    markers, reads = as_traced(scan(user_files(script), numberings(REPORTS)), "encoder-decoder", REPORTS, shown)
    capture = run_script(script, [], markers, 60, argv0=str(script), **reads)

    (hits,) = capture.hits.values()
    uses = [".".join(part[0] for part in hit.module) for hit in hits]  # the modules running each hit, in order
    assert uses == [".layers.0.self_attn", ".layers.1.self_attn", ".layers.0.self_attn",
                    ".layers.0.cross_attn", ".layers.1.self_attn", ".layers.1.cross_attn"]
    copied = [[call.kind for call in hit.calls if call.kind == "linear"] for hit in hits]
    layer = [int(use.split(".")[2]) + 1 for use in uses]  # each hit's layer: its use's hit number
    assert copied == [["linear"] if n <= shown else [] for n in layer], "calls copied up to each use's hit read"
    assert all(hit.values for hit in hits), "every hit's values are taken"
