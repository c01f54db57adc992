"""`trace` compiles the marked files with a call to the tracer around each marked statement
(trace/child/instrument.py): no trace function runs, and the script's code, line numbers and bytecode cache stay
its own."""

from __future__ import annotations

import contextlib
import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from transformer_trace.cli import main
from transformer_trace.trace.child import bootstrap


def _trace(script: Path, out: Path) -> dict:
    assert main(["trace", str(script), "--out", str(out), "--name", "t", "-q", "--report", "none"]) in (0, 1, 2)
    return json.loads((out / "t" / "snapshots.json").read_text(encoding="utf-8"))


def _trace_source(tmp_path: Path, name: str, source: str) -> dict:
    """``source`` written as tmp_path/name and traced into tmp_path/out."""
    script = tmp_path / name
    script.write_text(source, encoding="utf-8")
    return _trace(script, tmp_path / "out")


def _values(out: Path, point: str) -> list[float]:
    """Each hit's value of a scalar point, in the order of the hits."""
    files = sorted((out / "t" / "data").glob(f"hit*_{point}_*.npy"), key=lambda f: int(f.name[3:].split("_")[0]))
    return [float(np.load(f).reshape(-1)[0]) for f in files]


def _names(code: object) -> set[str]:
    names = set(code.co_names)
    for constant in code.co_consts:
        if hasattr(constant, "co_names"):
            names |= _names(constant)
    return names


def test_a_marked_module_is_captured_past_its_cached_bytecode_and_its_cache_is_left_as_python_wrote_it(tmp_path):
    (tmp_path / "layer.py").write_text("def double(x):\n    y = x * 2  # trace: y\n    return y\n", encoding="utf-8")
    script = tmp_path / "main.py"
    script.write_text("import torch\nfrom layer import double\nprint(double(torch.ones(3)).sum().item())\n",
                      encoding="utf-8")
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, str(script)], check=True, env=environment, capture_output=True)
    (cached,) = (tmp_path / "__pycache__").glob("layer.*.pyc")
    written = cached.read_bytes()
    data = _trace(script, tmp_path / "out")
    assert [s["captured"] for s in data["snapshots"]] == [True]
    assert cached.read_bytes() == written  # Python's own cache: neither rewritten nor read in place of the source
    assert "__transformer_trace__" not in _names(marshal.loads(written[16:]))


def test_the_marked_files_keep_their_line_numbers_and_tracebacks(tmp_path):
    data = _trace_source(tmp_path, "lines.py",
                         "import inspect, torch\n\n\ndef f(x):\n    y = x + 1  # trace: y\n"
                         "    assert inspect.currentframe().f_lineno == 6\n    return y\n\n"
                         "z = f(torch.ones(2))  # trace: z\nraise ValueError('at line 10')\n")
    assert [s["captured"] for s in data["snapshots"]] == [True, True]
    assert "ValueError: at line 10 (at lines.py:10:" in data["outcome"]["error"]


def test_a_module_loaded_from_its_path_by_importlib_is_captured(tmp_path):
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "block.py").write_text("import torch\nh = torch.zeros(4)  # trace: h\n", encoding="utf-8")
    data = _trace_source(tmp_path, "load.py",
                         "import importlib.util, pathlib\n"
                         "path = pathlib.Path(__file__).parent / 'parts' / 'block.py'\n"
                         "spec = importlib.util.spec_from_file_location('block', path)\n"
                         "module = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(module)\n"
                         "import parts.block\n")
    assert [s["captured"] for s in data["snapshots"]] == [True]
    assert len(list((tmp_path / "out" / "t" / "data").glob("hit*_h_*.npy"))) == 2  # once per load


def test_an_edited_file_is_compiled_again_and_an_unchanged_one_is_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("TT_CACHE_DIR", str(tmp_path / "cache"))
    script = tmp_path / "edit.py"
    script.write_text("import torch\nx = torch.ones(2)  # trace: x\n", encoding="utf-8")
    assert _trace(script, tmp_path / "out")["snapshots"][0]["shape"] == [2]
    compiled = sorted((tmp_path / "cache" / "instrumented").iterdir())
    assert len(compiled) == 1
    assert _trace(script, tmp_path / "out")["snapshots"][0]["shape"] == [2]
    assert sorted((tmp_path / "cache" / "instrumented").iterdir()) == compiled
    script.write_text("import torch\nx = torch.ones(5)  # trace: x\n", encoding="utf-8")
    assert _trace(script, tmp_path / "out")["snapshots"][0]["shape"] == [5]


def test_a_marked_return_of_a_recursive_function_is_captured_at_each_call_as_it_returns(tmp_path):
    _trace_source(tmp_path, "fact.py",
                  "def fact(n):\n    return 1 if n == 0 else n * fact(n - 1)  # trace: r\n\n\nfact(3)\n",
                  )
    assert _values(tmp_path / "out", "r") == [1, 1, 2, 6]


def test_a_marked_statement_that_raises_is_not_captured_and_the_next_pass_is(tmp_path):
    _trace_source(tmp_path, "raises.py",
                  "import torch\nfor d in (0.0, 2.0):\n    try:\n"
                  "        q = torch.tensor(1.0) / d if d else 1 // int(d)  # trace: q\n"
                  "    except ZeroDivisionError:\n        pass\n")
    assert _values(tmp_path / "out", "q") == [0.5]


def test_marked_lines_run_by_the_scripts_threads_are_captured(tmp_path):
    _trace_source(tmp_path, "threads.py",
                  "import threading, torch\n\ndef work(n):\n    t = torch.full((1,), float(n))  # trace: t\n\n"
                  "threads = [threading.Thread(target=work, args=(n,)) for n in range(3)]\n"
                  "for thread in threads:\n    thread.start()\n    thread.join()\n")
    assert _values(tmp_path / "out", "t") == [0, 1, 2]


def test_the_corpus_benchmark_times_traced_runs_that_capture_every_hit_a_trace_does():
    """The Benchmarks page's corpus table times the tracer as `trace` runs it, never a run that captured less."""
    from transformer_trace.reports import REPORTS
    from transformer_trace.trace import as_traced, choose_numbering, numberings
    from transformer_trace.trace.reading.capture import run_script
    from transformer_trace.trace.reading.user_files import user_files
    from transformer_trace.trace.markers import scan

    root = Path(__file__).resolve().parent.parent
    driver = root / "tests" / "trace_corpus" / "karpathy_nanoGPT" / "trace_driver.py"
    result = subprocess.run([sys.executable, str(root / "benchmarks" / "corpus.py"), str(driver), "1"], check=True,
                            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)})
    measured = json.loads(result.stdout.splitlines()[-1])
    markers = scan(user_files(driver), numberings(REPORTS))
    markers, reads = as_traced(markers, choose_numbering("auto", markers, driver, REPORTS), REPORTS)
    capture = run_script(driver, [], markers, timeout=120, **reads)
    hits = sum(len(found) for found in capture.hits.values())
    assert hits > 0 and measured["hits"] == [hits, hits]  # the warm-up run and the timed one


def test_a_script_that_compiles_its_marked_code_runs_as_it_would_and_is_told_why_nothing_was_captured_there(tmp_path):
    script = tmp_path / "compiled.py"
    script.write_text("import torch\n\ndef f(x):\n    y = torch.sin(x) + 1  # trace: y\n    return y * 2\n\n"
                      "compiled = torch.compile(f, backend='eager', fullgraph=True)\n"
                      "z = compiled(torch.ones(3))  # trace: z\nprint('ran', z.tolist())\n", encoding="utf-8")
    data = _trace(script, tmp_path / "out")
    assert data["outcome"]["finished"] and sorted(s["captured"] for s in data["snapshots"]) == [False, True]
    (warning,) = data["outcome"]["warnings"]
    assert "'# trace: y' was never reached: f() never ran as written: the script calls torch.compile" in warning


def test_a_marked_line_torch_export_runs_with_fake_tensors_is_no_hit_and_its_eager_run_is(tmp_path):
    """torch.export (not strict) runs the module's Python code itself, with fake tensors, under the flag
    torch.compiler.is_compiling reads: the tracer checks that flag as well as dynamo's (Tracer.torch_imported)."""
    data = _trace_source(tmp_path, "exported.py",
                         "import torch\nfrom torch import nn\n\nclass Block(nn.Module):\n"
                         "    def forward(self, x):\n        y = x + 1  # trace: y\n        return y * 2\n\n"
                         "torch.export.export(Block(), (torch.ones(2, 3),), strict=False)\n"
                         "Block()(torch.full((2, 3), 2.0))\n")
    assert data["outcome"]["finished"], data["outcome"]
    [snapshot] = data["snapshots"]  # its first hit shown: the eager call's, the only one
    assert snapshot["first"] == [3.0] * 6 and _values(tmp_path / "out", "y") == [3.0]


class _Hook:
    """The tracer, as a marked module's compiled code calls it: which marked code ran (its file)."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.statements = [contextlib.nullcontext()]

    def entered(self, code: tuple) -> None:
        self.ran.append(code[0])


def test_a_marked_file_imported_by_its_own_path_or_another_is_compiled_marked_and_no_other_file_of_its_name(tmp_path):
    """instrument.patch_loader knows a marked file by the markers' path without a real path, and by any other path
    to it (a symlinked folder) by its real path; a file of the same name elsewhere is left as it is."""
    instrument = bootstrap._beside("instrument.py")
    real, other = tmp_path / "real", tmp_path / "other"
    real.mkdir(), other.mkdir()
    (tmp_path / "link").symlink_to(real)
    for folder in (real, other):
        (folder / "marked_mod.py").write_text("x = 1\n", encoding="utf-8")
    marked = str(real / "marked_mod.py")
    hook = _Hook()
    undo = instrument.patch_loader({os.path.realpath(marked): instrument.Plan(marked, {(1, 1): 0}, {}, {})}, hook)
    try:
        from importlib.util import module_from_spec, spec_from_file_location

        for number, path in enumerate([real, tmp_path / "link", other]):
            spec = spec_from_file_location(f"marked_mod_{number}", path / "marked_mod.py")
            module = module_from_spec(spec)
            spec.loader.exec_module(module)
            assert module.x == 1 and (instrument.HOOK in vars(module)) == (path != other)
    finally:
        undo()
    assert hook.ran == [marked, marked]


def test_future_imports_stay_first_when_they_are_marked_or_share_a_marked_line(tmp_path):
    data = _trace_source(tmp_path, "future.py",
                         '"""Doc."""\n# trace: feature annotations\nfrom __future__ import annotations\n'
                         "import torch; x = torch.ones(2)  # trace: x\n\ndef f(a: Undefined) -> None:\n    pass\n\n"
                         "assert f.__annotations__['a'] == 'Undefined' and __doc__ == 'Doc.'\n")
    assert data["outcome"]["finished"], data["outcome"]
    assert [s["captured"] for s in data["snapshots"]] == [True, True]


def test_a_marked_statement_in_a_signal_handler_that_interrupts_a_capture_is_captured_too(tmp_path):
    data = _trace_source(tmp_path, "signals.py",
                         "import signal, torch\nn = 0\n\ndef handler(sig, frame):\n    global n\n"
                         "    s = torch.ones(1) * n  # trace: s\n    n += 1\n\n"
                         "signal.signal(signal.SIGALRM, handler)\nsignal.setitimer(signal.ITIMER_REAL, 0.0005, 0.0005)\n"
                         "for i in range(3000):\n    x = torch.full((64,), float(i))  # trace: x\n"
                         "signal.setitimer(signal.ITIMER_REAL, 0, 0)\nassert n > 0\n")
    assert data["outcome"]["finished"], data["outcome"]
    assert all(s["captured"] for s in data["snapshots"])


def test_marked_lines_run_under_pytorchs_own_transforms_leave_the_script_to_finish(tmp_path):
    """torch.fx, vmap, checkpointing and torch.jit.trace run the marked lines with stand-ins for tensors: what is
    captured there is no reason for the script to fail."""
    data = _trace_source(tmp_path, "transforms.py",
                         "import torch, torch.fx\nfrom torch.utils.checkpoint import checkpoint\n\n"
                         "class M(torch.nn.Module):\n    def forward(self, x):\n        h = x * 2  # trace: h\n"
                         "        return h + 1\n\n"
                         "assert torch.fx.symbolic_trace(M())(torch.ones(2)).tolist() == [3.0, 3.0]\n\n"
                         "def f(x):\n    v = x.sin()  # trace: v\n    return v\n\n"
                         "assert torch.vmap(f)(torch.zeros(2, 3)).shape == (2, 3)\n"
                         "x = torch.ones(2, requires_grad=True)\n\n"
                         "def block(t):\n    c = t * 3  # trace: c\n    return c.sum()\n\n"
                         "checkpoint(block, x, use_reentrant=False).backward()\n"
                         "assert torch.jit.trace(M(), torch.ones(2))(torch.ones(2)).tolist() == [3.0, 3.0]\n",
                         )
    assert data["outcome"]["finished"], data["outcome"]
    assert all(s["captured"] for s in data["snapshots"])


def test_the_cache_of_compiled_files_keeps_the_newest_ones_only(tmp_path, monkeypatch):
    from transformer_trace.trace.child import instrument

    monkeypatch.setattr(instrument, "MOST_KEPT", 3)
    plan = instrument.Plan("s.py", {(1, 1): 0}, {}, {})
    for n in range(5):
        instrument.compile_marked(f"x = {n}  # trace: x\n".encode(), "s.py", plan, str(tmp_path))
        os.utime(max(tmp_path.iterdir(), key=os.path.getmtime), (n, n))  # an older file for each earlier source
    assert len(list(tmp_path.glob("*.code"))) == 3
    kept = instrument.compile_marked(b"x = 4  # trace: x\n", "s.py", plan, str(tmp_path))
    assert len(list(tmp_path.glob("*.code"))) == 3 and "__transformer_trace__" in kept.co_names


def test_a_marked_name_whose_reading_raises_is_said_on_its_page_and_the_script_runs_on(tmp_path):
    data = _trace_source(tmp_path, "prop.py",
                         "class Box:\n    @property\n    def value(self):\n        raise RuntimeError('no value')\n\n"
                         "box = Box()  # trace: box box.value\nprint('ran on')\n")
    assert data["outcome"]["finished"] and data["outcome"]["error"] is None, data["outcome"]
    assert "reading it raised RuntimeError" in json.dumps(data["snapshots"])


def test_a_marker_on_a_header_that_assigns_reads_what_it_assigns_as_its_body_begins(tmp_path):
    """`if (n := ...):`, `while (k := ...):` and `with ... as name:` compute the value on the marked line: the marker
    reads the walrus's target or the `as` name as the body begins (it was refused: "put it on the line that computes
    the value")."""
    data = _trace_source(tmp_path, "headers.py", (
        "values = [3, 1, 2]\n"
        "if (n := len(values)) > 2:  # trace: n\n"
        "    pass\n"
        "k = 2\n"
        "while (k := k - 1) > 0:  # trace: k\n"
        "    pass\n"
        "with open(__file__) as fh:  # trace: closed fh.closed\n"
        "    pass\n"))
    by_variable = {s["variable"]: s for s in data["snapshots"]}
    assert by_variable["n"]["captured"] and by_variable["n"]["first"] == [3.0]
    assert by_variable["k"]["captured"] and by_variable["k"]["first"] == [1.0]
    assert by_variable["fh.closed"]["captured"] and by_variable["fh.closed"]["first"] == [0.0]


@pytest.mark.parametrize("imports", ['importlib.import_module("pkg.marked")', '__import__("pkg.marked").marked',
                                     'importlib.import_module(".marked", "pkg")'])
def test_a_marked_module_imported_by_a_name_written_in_an_import_module_call_is_traced(tmp_path, imports):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "marked.py").write_text("import torch\n\ndef f(n):\n    t = torch.full((1,), float(n))"
                                                "  # trace: t\n    return t\n", encoding="utf-8")
    _trace_source(tmp_path, "dynamic.py", f"import importlib\nmodule = {imports}\nmodule.f(4)\nmodule.f(5)\n")
    assert _values(tmp_path / "out", "t") == [4, 5]


def test_no_marker_names_where_markers_were_looked_for(tmp_path, capsys):
    (tmp_path / "hidden.py").write_text("t = 1  # trace: t\n", encoding="utf-8")
    script = tmp_path / "dynamic.py"
    script.write_text("import importlib\nname = 'hid' + 'den'\nimportlib.import_module(name)\n", encoding="utf-8")
    assert main(["trace", str(script), "--out", str(tmp_path / "out"), "-q"]) == 2
    assert "no breakpoint comment found in it or in the modules of its folder it imports (`import`, `from ... import`, " \
           '`importlib.import_module("name")`)' in capsys.readouterr().err
