"""`python -m transformer_trace trace` runs the script as `python SCRIPT.py` would, in an interpreter of its own: its own
modules import, its processes run untraced, --timeout and signals end every process it started, and what it does to its
interpreter stays there."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from transformer_trace.cli import main

ROOT = Path(__file__).resolve().parent.parent
ENCODER_DECODER = ROOT / "examples" / "encoder_decoder_trace.py"


def write(folder: Path, name: str, source: str, encoding: str = "utf-8") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(textwrap.dedent(source).encode(encoding))
    return path


def trace(script: Path, out: Path, *extra: str) -> tuple[int, dict]:
    code = main(["trace", str(script), "--out", str(out), "--name", "t", "-q", *extra])
    data = out / "t" / "snapshots.json"
    return code, json.loads(data.read_text(encoding="utf-8")) if data.exists() else {}


def captured(data: dict) -> dict[str, list | None]:
    """Each snapshot's variable -> the first values of the hit the pages show (None where nothing was captured)."""
    return {s["variable"]: s["first"] if s["captured"] else None for s in data["snapshots"]}


def command(script: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "transformer_trace", "trace", str(script), "--out", str(out), "--name", "t", *extra]


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}


def gone(pid: int) -> bool:
    """The process has ended (a zombie waiting for a parent that is not ours counts as ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def wait_for(path: Path, seconds: float = 60) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().endswith("\n"):
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} was never written")


# ----------------------------------------------------------------------------- an interpreter of its own


def test_a_script_with_its_own_models_generator_and_utils_modules_imports_them(tmp_path):
    write(tmp_path, "models/__init__.py", "WIDTH = 5\n")
    write(tmp_path, "models/model.py", "def depth():\n    return 7\n")
    write(tmp_path, "generator/__init__.py", "NAME = 'mine'\n")
    write(tmp_path, "utils.py", "K = 11\n")
    script = write(tmp_path, "run.py", """\
        import generator, utils
        from models import WIDTH
        from models.model import depth
        x = [WIDTH, depth(), len(generator.NAME), utils.K]  # trace: x
    """)
    code, data = trace(script, tmp_path / "out", "--report", "none")
    assert code == 0 and captured(data)["x"] == [5, 7, 4, 11]


def test_the_script_gets_the_users_environment_and_an_interpreter_with_none_of_our_modules(tmp_path, monkeypatch):
    import transformer_trace

    monkeypatch.setattr(transformer_trace, "ENVIRONMENT_ADDED", {"OMP_WAIT_POLICY": "PASSIVE"})  # the user set none
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    monkeypatch.setenv("TRACE_TEST_USERS_OWN", "kept")
    script = write(tmp_path, "env.py", """\
        import os, sys
        seen = [name in sys.modules for name in ('transformer_trace', 'generator', 'models', 'torch')]
        mine = os.environ.get('TRACE_TEST_USERS_OWN') == 'kept'
        x = [int(v) for v in [*seen, 'OMP_WAIT_POLICY' in os.environ, mine]]  # trace: x
    """)
    code, data = trace(script, tmp_path / "out", "--report", "none")
    assert code == 0 and captured(data)["x"] == [0, 0, 0, 0, 0, 1]


def test_argv_path_and_main_are_what_python_script_py_makes_them(tmp_path):
    script = write(tmp_path, "sub/args.py", """\
        import os, sys, __main__
        here = os.path.dirname(os.path.abspath(__file__))
        loader = type(__loader__).__name__
        x = [int(v) for v in [sys.argv[1:] == ['a', 'b'], sys.path[0] == here, __name__ == '__main__',
                              __main__.__dict__ is globals(), __spec__ is None, os.path.isabs(__file__),
                              loader == 'SourceFileLoader', __builtins__ is sys.modules['builtins']]]  # trace: x
    """)
    code, data = trace(script, tmp_path / "out", "--report", "none", "--", "a", "b")
    assert code == 0 and captured(data)["x"] == [1] * 8


def test_the_script_runs_in_a_process_group_and_session_of_its_own(tmp_path):
    script = write(tmp_path, "group.py", """\
        import os
        x = [int(os.getsid(0) == os.getpid()), int(os.getpgid(0) == os.getpid())]  # trace: x
    """)
    code, data = trace(script, tmp_path / "out", "--report", "none")
    assert code == 0 and captured(data)["x"] == [1, 1]


def test_a_script_that_closes_its_stdout_does_not_break_the_command(tmp_path, capsys):
    script = write(tmp_path, "closes.py", "import sys\nx = [1, 2]  # trace: x\nsys.stdout.close()\n")
    assert main(["trace", str(script), "--out", str(tmp_path / "out"), "--name", "t", "--report", "none"]) == 0
    assert "traced closes.py" in capsys.readouterr().out


@pytest.mark.parametrize("ending, between", [("sys.stdout.write('no newline at end')", "no newline at end\ntraced"),
                                             ("print('a line', end='')", "a line\ntraced"),
                                             ("print('ended')", "ended\ntraced")])
def test_the_summary_starts_on_a_line_of_its_own_after_the_scripts_output(tmp_path, capfd, ending, between):
    script = write(tmp_path, "unended.py", f"import sys\nx = [1, 2]  # trace: x\n{ending}\n")
    assert main(["trace", str(script), "--out", str(tmp_path / "out"), "--name", "t", "--report", "none"]) == 0
    out = capfd.readouterr().out
    assert between in out and "\n\ntraced" not in out


def test_the_scripts_stdout_is_pythons_text_stream_and_what_it_restores_from(tmp_path):
    script = write(tmp_path, "streams.py", """\
        import io, sys
        stream = sys.stdout
        sys.stdout = io.StringIO()
        print('hidden')
        sys.stdout = sys.__stdout__
        x = [int(v) for v in [isinstance(stream, io.TextIOWrapper), stream is sys.stdout, stream.name == '<stdout>',
                              stream.mode == 'w', stream.fileno() == 1]]  # trace: x
    """)
    code, data = trace(script, tmp_path / "out", "--report", "none")
    assert code == 0 and captured(data)["x"] == [1] * 5


@pytest.mark.slow
def test_a_default_device_the_script_leaves_set_does_not_reach_the_checks(tmp_path):
    script = tmp_path / ENCODER_DECODER.name
    source = ENCODER_DECODER.read_text(encoding="utf-8") + "    torch.set_default_device('meta')\n"
    script.write_text(source, encoding="utf-8")
    code, data = trace(script, tmp_path / "out")
    counts = {"captured": 43, "total": 43, "passed": 26, "failed": 0, "unrecognised": 0, "unchecked": 17}  # as without it
    assert code == 0 and data["outcome"]["counts"] == counts


# ----------------------------------------------------------------------------- as Python reads and runs it


def test_a_script_in_the_encoding_its_coding_declaration_names_is_read_and_quoted(tmp_path):
    script = write(tmp_path, "latin.py", "# -*- coding: latin-1 -*-\nx = [len('café')]  # trace: x\n",
                   encoding="latin-1")
    code, data = trace(script, tmp_path / "out", "--report", "none")
    assert code == 0 and captured(data)["x"] == [4]
    assert "café" in (tmp_path / "out" / "t" / data["snapshots"][0]["page"]).read_text(encoding="utf-8")


def test_a_module_in_python_2_syntax_the_script_never_imports_does_not_stop_the_trace(tmp_path):
    write(tmp_path, "legacy.py", "print 'this is Python 2'\n")
    script = write(tmp_path, "modern.py", "if False:\n    import legacy\nx = [1]  # trace: x\n")
    code, data = trace(script, tmp_path / "out", "--report", "none")
    assert code == 0 and captured(data)["x"] == [1]


def test_a_marked_module_that_does_not_parse_is_refused_in_one_line(tmp_path, capsys):
    write(tmp_path, "broken.py", "def f(:\n    y = 1  # trace: y\n")
    script = write(tmp_path, "main.py", "import broken\nx = [1]  # trace: x\n")
    assert main(["trace", str(script), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "broken.py:1: syntax error" in err and err.count("\n") == 1


def test_warnings_and_output_of_a_script_that_fails_reach_the_terminal(tmp_path, capfd):
    script = write(tmp_path, "warns.py", """\
        import warnings
        print('printed before the failure')
        warnings.warn('careful with this')
        x = [1]  # trace: x
        raise ValueError('boom')
    """)
    code, data = trace(script, tmp_path / "out", "--report", "none")
    out, err = capfd.readouterr()
    assert code == 2 and captured(data)["x"] == [1]
    assert "printed before the failure" in out and "UserWarning: careful with this" in err and "ValueError: boom" in err


def test_a_script_that_swallows_every_exception_cannot_swallow_a_missing_variable(tmp_path, capsys):
    script = write(tmp_path, "swallows.py", """\
        try:
            len([1])  # trace: p not_there
            z = 2  # the marked line is read here, inside the script's try
        except BaseException:
            pass
        x = [1]  # trace: x
    """)
    assert main(["trace", str(script), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "there is no variable 'not_there'" in err and err.count("\n") == 1 and not (tmp_path / "out").exists()


def test_a_tiny_timeout_gives_a_one_line_result_not_a_traceback(tmp_path, capsys):
    script = write(tmp_path, "quick.py", "x = [1]  # trace: x\n")
    code, data = trace(script, tmp_path / "out", "--report", "none", "--timeout", "1e-9")
    err = capsys.readouterr().err
    assert code == 2 and data["outcome"]["timed_out"] and err.count("\n") == 1 and "--timeout" in err


# ----------------------------------------------------------------------------- processes


CHILDREN = {
    "os.fork, the child running on to the script's end": """\
        import os
        def work():
            y = [2]  # trace: y
        pid = os.fork()
        if pid == 0:
            work()
        else:
            assert os.waitpid(pid, 0)[1] == 0
            x = [1]  # trace: x
    """,
    "multiprocessing fork": """\
        import multiprocessing as mp
        def work():
            y = [2]  # trace: y
        if __name__ == '__main__':
            p = mp.get_context('fork').Process(target=work)
            p.start(); p.join()
            assert p.exitcode == 0
            x = [1]  # trace: x
    """,
    "multiprocessing spawn": """\
        import multiprocessing as mp
        def work():
            y = [2]  # trace: y
        if __name__ == '__main__':
            p = mp.get_context('spawn').Process(target=work)
            p.start(); p.join()
            assert p.exitcode == 0
            x = [1]  # trace: x
    """,
    "DataLoader workers": """\
        import torch
        from torch.utils.data import DataLoader, Dataset
        class Numbers(Dataset):
            def __len__(self):
                return 8
            def __getitem__(self, i):
                y = [i]  # trace: y
                return torch.tensor([float(i)])
        if __name__ == '__main__':
            total = sum(float(b.sum()) for b in DataLoader(Numbers(), batch_size=2, num_workers=2))
            x = [int(total) - 27]  # trace: x
    """,
}


@pytest.mark.slow
@pytest.mark.parametrize("source", CHILDREN.values(), ids=CHILDREN.keys())
def test_only_the_traced_process_captures_and_the_report_is_written_once(tmp_path, source):
    script = write(tmp_path, "children.py", source)
    done = subprocess.run(command(script, tmp_path / "out", "--report", "none"), capture_output=True, text=True,
                          timeout=240, cwd=ROOT, env=environment())
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("traced children.py") == 1
    data = json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))
    assert captured(data) == {"x": [1], "y": None}  # the children ran the marked line untraced


def test_a_daemonised_grandchild_does_not_outlive_the_command(tmp_path):
    pid_file = tmp_path / "daemon.pid"
    script = write(tmp_path, "daemon.py", f"""\
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                open({str(pid_file)!r}, 'w').write(f'{{os.getpid()}}\\n')
                time.sleep(120)
            os._exit(0)
        while not os.path.exists({str(pid_file)!r}):
            time.sleep(0.01)
        x = [1]  # trace: x
    """)
    code, data = trace(script, tmp_path / "out", "--report", "none")
    assert code == 0 and captured(data)["x"] == [1]
    assert gone(int(wait_for(pid_file)))
    assert any("left 1 process(es) running" in w for w in data["outcome"]["warnings"])


@pytest.mark.slow
def test_sigterm_to_the_command_ends_the_script_and_its_children(tmp_path):
    pids = tmp_path / "pids"
    script = write(tmp_path, "waits.py", f"""\
        import os, subprocess, sys, time
        child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])
        x = [1]  # trace: x
        open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}\\n')
        time.sleep(120)
    """)
    junit = tmp_path / "junit.xml"
    running = subprocess.Popen(command(script, tmp_path / "out", "--report", "none", "--junit", str(junit)), cwd=ROOT,
                               env=environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    script_pid, child_pid = map(int, wait_for(pids).split())
    running.send_signal(signal.SIGTERM)
    _, err = running.communicate(timeout=60)
    assert running.returncode == 128 + signal.SIGTERM and "Traceback" not in err
    assert gone(script_pid) and gone(child_pid)
    # a CI job's timeout: its test report still shows this student, stopped
    error = ET.parse(junit).getroot().find(".//testcase/error")
    assert error.get("type") == "interrupted" and "SIGTERM" in error.get("message")


STUBBORN = {
    "ignores SIGALRM and SIGTERM and blocks in C": """\
        import os, signal
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        x = [1]  # trace: x
        r, w = os.pipe()
        os.read(r, 1)
    """,
    "catches BaseException in a loop": """\
        import time
        x = [1]  # trace: x
        while True:
            try:
                time.sleep(0.05)
            except BaseException:
                pass
    """,
}


@pytest.mark.slow
@pytest.mark.parametrize("source", STUBBORN.values(), ids=STUBBORN.keys())
def test_timeout_ends_a_script_that_resists_it_from_outside(tmp_path, source):
    script = write(tmp_path, "stubborn.py", source)
    started = time.monotonic()
    done = subprocess.run(command(script, tmp_path / "out", "--report", "none", "-q", "--timeout", "1"),
                          capture_output=True, text=True, timeout=120, cwd=ROOT, env=environment())
    assert done.returncode == 2 and "--timeout" in done.stderr and "Traceback" not in done.stderr
    assert time.monotonic() - started < 60
    data = json.loads((tmp_path / "out" / "t" / "snapshots.json").read_text(encoding="utf-8"))
    assert data["outcome"]["timed_out"] and captured(data)["x"] == [1]


def test_a_command_killed_with_sigkill_leaves_no_script_running(tmp_path):
    """SIGKILL gives the command no chance to stop anything: the script's interpreter sees the pipe only the command
    held close and ends its own process group (the script and what it started)."""
    script = write(tmp_path, "slow.py", """\
        import os, subprocess, sys, time
        import torch
        x = torch.ones(3)  # trace: x
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        with open(sys.argv[1], "w") as f:
            f.write(f"{os.getpid()} {child.pid}\\n")
        time.sleep(60)
    """)
    started = subprocess.Popen(command(script, tmp_path / "out", "--", str(tmp_path / "pids")), env=environment())
    pids = [int(pid) for pid in wait_for(tmp_path / "pids").split()]
    started.kill()
    started.wait()
    deadline = time.monotonic() + 10
    while not all(gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(gone(pid) for pid in pids)


@pytest.mark.parametrize("shadow", ["traceback", "json", "types", "ctypes"])
def test_a_student_file_named_like_the_standard_library_is_imported_as_python_imports_it(tmp_path, capfd, shadow):
    """The script's own file where `python SCRIPT.py` imports it (``types`` is imported before any script runs), and
    the tracer's error report still works."""
    write(tmp_path, f"{shadow}.py", "MINE = True\n")
    script = write(tmp_path, "s.py", f"""\
        import {shadow}
        print('mine:', getattr({shadow}, 'MINE', False))
        x = [1]  # trace: x
        raise ValueError('the script fails')
    """)
    python = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    code, data = trace(script, tmp_path / "out", "--report", "none")
    out, err = capfd.readouterr()
    assert python.stdout in out and ("mine: True" in out) == (shadow != "types")
    assert code == 2 and captured(data)["x"] == [1]
    assert "error: the script failed: ValueError: the script fails (at s.py:4" in err


def test_the_generator_run_in_a_folder_with_a_traceback_py_uses_the_standard_librarys(tmp_path):
    write(tmp_path, "traceback.py", "raise RuntimeError('the student file was imported by the generator')\n")
    script = write(tmp_path, "s.py", "x = [1]  # trace: x\n")
    result = subprocess.run(command(script, tmp_path / "out", "--report", "none", "-q"), cwd=tmp_path,
                            env=environment(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]


def test_main_has_annotations_and_the_scripts_excepthook_runs_when_it_fails(tmp_path):
    script = write(tmp_path, "s.py", """\
        import os, sys
        x = [len(__annotations__)]  # trace: x
        def crash_log(kind, value, tb):
            open(os.path.join(os.path.dirname(__file__), 'crash.log'), 'w').write(f'{kind.__name__}: {value}')
        sys.excepthook = crash_log
        raise ValueError('logged')
    """)
    code, data = trace(script, tmp_path / "out", "--report", "none")
    assert code == 2 and captured(data)["x"] == [0]  # no annotation: python's `{}`
    assert (tmp_path / "crash.log").read_text() == "ValueError: logged"


def test_an_uncaught_error_two_calls_deep_shows_pythons_traceback_on_the_terminal_and_the_overview(tmp_path, capfd):
    script = write(tmp_path, "deep.py", """\
        def inner(n):
            raise ValueError(f'deep {n}')
        def outer():
            inner(2)
        x = [1]  # trace: x
        outer()
    """)
    code, _ = trace(script, tmp_path / "out")
    err = capfd.readouterr().err
    python = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60).stderr
    assert code == 2 and python.strip() in err and "bootstrap.py" not in err
    overview = (tmp_path / "out" / "t" / "index.md").read_text(encoding="utf-8")
    assert "\n".join("    " + line for line in python.strip().splitlines()) in overview


def test_a_spawn_pool_in_a_with_block_leaves_no_process_said_to_be_running(tmp_path):
    """multiprocessing's resource tracker, which a `spawn` pool starts, ends by itself once the script has ended."""
    script = write(tmp_path, "pool.py", """\
        import multiprocessing as mp
        def square(x):
            return x * x
        if __name__ == "__main__":
            with mp.get_context("spawn").Pool(2) as pool:
                x = pool.map(square, [1, 2, 3])  # trace: x
    """)
    code, data = trace(script, tmp_path / "out", "--report", "none")
    assert code == 0 and captured(data)["x"] == [1, 4, 9] and data["outcome"]["warnings"] == []


def test_ctrl_c_is_this_processs_again_whatever_the_cleanup_after_the_script_raised(monkeypatch):
    """run_child ignores SIGINT and SIGTERM while it stops the script's processes; a cleanup that raised had left them
    ignored, and an ignored SIGINT is inherited by every process started later (a pytest worker's `serve` and `build`
    then never stopped on Ctrl-C: CI's stop 58 and this stop's full run)."""
    from transformer_trace.trace import process

    def vanished(child, before):
        raise FileNotFoundError("/proc/4242/task")  # a process that ended between pathlib's check and its listing

    monkeypatch.setattr(process, "end_processes", vanished)
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with pytest.raises(FileNotFoundError):
        process.run_child([sys.executable, "-c", "import sys; sys.exit(0)"], dict(os.environ), 30)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers


def test_the_descendants_of_a_process_that_ends_as_they_are_read_are_those_found(monkeypatch):
    from pathlib import Path

    from transformer_trace.trace import process

    listed = Path.glob

    def glob(self, pattern):
        if str(self) == "/proc/4242/task":  # gone between pathlib's is_dir and its scandir
            raise FileNotFoundError(str(self))
        return listed(self, pattern)

    monkeypatch.setattr(Path, "glob", glob)
    read = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: "4242" if self.name == "children" and
                        str(self).startswith(f"/proc/{os.getpid()}/") else read(self, *a, **k))
    assert 4242 in process.descendants(os.getpid())  # found, not a FileNotFoundError out of the cleanup
