"""No process outlives its parent: the figure workers of a build die with it, SIGKILL included, and never hold the
port of `python -m transformer_trace serve`, so a server killed while figures are drawn restarts on the same port at once."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from transformer_trace.cli import main
from tests.conftest import BUILD_ONLY, ROOT

ED = "encoder-decoder"
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists() or (os.cpu_count() or 1) < 2,
                                reason="figure workers run only with two cores or more; children are read from /proc")


def children(pid: int) -> set[int]:
    """The processes whose parent is ``pid``."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.add(int(entry.name))
            except (OSError, IndexError, ValueError):
                pass
    return found


def alive(pids: set[int]) -> set[int]:
    out = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.add(pid)
    return out


def wait_for_workers(pid: int, timeout: float = 120) -> set[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(workers := children(pid)) >= 2:
            return workers
        time.sleep(0.01)
    raise AssertionError("no figure workers were started")


def wait_gone(pids: set[int], timeout: float = 5) -> set[int]:
    deadline = time.monotonic() + timeout
    while alive(pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive(pids)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_serve(docs: Path, config: Path, port: int, stderr: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "transformer_trace", "serve", "--port", str(port), "--docs", str(docs), "--config", str(config), "-q"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr.open("wb"), text=True,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    return proc, proc.stdout.readline()


def sigkill_leaves_no_workers(proc: subprocess.Popen, what: str) -> None:
    """SIGKILL ``proc`` once it has figure workers, and assert that none of them outlives it."""
    try:
        workers = wait_for_workers(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert wait_gone(workers) == set(), f"figure workers outlived {what}"
    finally:
        _kill(locals().get("workers", set()))
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_a_sigkilled_serve_leaves_no_workers_and_restarts_on_the_same_port(tmp_path):
    docs = tmp_path / "docs"
    assert main(["build", "--model", ED, "--out", str(docs), "--device", "cpu", "-q"]) == 0
    config = tmp_path / "mkdocs.yml"
    config.write_text(f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: {docs}\nsite_dir: {tmp_path / 'site'}\n{BUILD_ONLY}", encoding="utf-8")
    port = free_port()
    proc, line = start_serve(docs, config, port, tmp_path / "first.txt")
    try:
        assert line.startswith(f"serving http://127.0.0.1:{port}/"), line + (tmp_path / "first.txt").read_text()
        body = json.dumps({"model": ED, "src": "the workers must die with their parent", "device": "cpu"}).encode()
        post = urllib.request.Request(f"http://127.0.0.1:{port}/api/regenerate", data=body, headers={"Content-Type": "application/json"})
        threading.Thread(target=lambda: _ignore_errors(lambda: urllib.request.urlopen(post, timeout=120).read()), daemon=True).start()
        sigkill_leaves_no_workers(proc, "the server")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)

    again, line = start_serve(docs, config, port, tmp_path / "second.txt")
    try:
        assert line.startswith(f"serving http://127.0.0.1:{port}/"), line + (tmp_path / "second.txt").read_text()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=30) as response:
            assert json.loads(response.read())["app"] == "transformer-trace"
    finally:
        again.send_signal(signal.SIGINT)
        again.wait(60)


def test_a_sigkilled_cli_build_leaves_no_workers(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "transformer_trace", "build", "--model", ED, "--out", str(tmp_path / "docs"), "--device", "cpu", "-q"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sigkill_leaves_no_workers(proc, "the build")


def _ignore_errors(call) -> None:
    try:
        call()
    except OSError:
        pass


def _kill(pids: set[int]) -> None:
    """Leave no orphan behind when a test fails."""
    for pid in alive(pids):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
