"""`make serve` as the README runs it: a SIGTERM to make alone (a CI job's timeout, a supervisor stopping it) ends the
server it started, frees the port at once and leaves no process of it behind (the Makefile execs its commands, so
make's SIGTERM reaches the server itself); so does a SIGKILL to make, which nothing can forward (the server asks Linux
to end it with its parent)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

SITE = """site_name: make serve
theme:
  name: material
  font: false
plugins:
  transformer-trace:
    reports:
      toy-vit: {}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _alive_in_group(pgid: int) -> list[str]:
    """The live (not zombie) processes of process group ``pgid``: their pid and command line."""
    alive = []
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = status.read_text().rsplit(")", 1)[1].split()
            cmdline = (status.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
        state, group = fields[0], int(fields[2])
        if group == pgid and state not in ("Z", "X"):
            alive.append(f"{status.parent.name}: {cmdline}")
    return alive


def _wait(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_signal_to_make_serve_alone_ends_the_server_and_frees_its_port(tmp_path, stop):
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    (tmp_path / "mkdocs.yml").write_text(SITE, encoding="utf-8")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n", encoding="utf-8")
    (tmp_path / "scripts").mkdir()
    for name in ("pyproject.toml", "setup.py", "scripts/quiet_material.py"):  # the environment is this one's: make
        (tmp_path / name).touch()                                             # finds it installed
        os.utime(tmp_path / name, (0, 0))
    (tmp_path / "stamp").touch()
    port = _free_port()
    log = (tmp_path / "make.log").open("w")
    make = subprocess.Popen(["make", "serve", f"PY={sys.executable}", f"STAMP={tmp_path / 'stamp'}", f"PORT={port}"],
                            cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, "TT_CACHE_DIR": str(tmp_path / "cache")})
    try:
        assert _wait(lambda: _listening(port) or make.poll() is not None, 300), "the server never listened"
        assert make.poll() is None, (tmp_path / "make.log").read_text()
        assert len(_alive_in_group(make.pid)) >= 2  # make and the server it started
        os.kill(make.pid, stop)  # make alone, not its process group (SIGKILL: the server dies with its parent)
        make.wait(10)
        assert _wait(lambda: not _listening(port), 5), f"port {port} still held after make ended"
        assert _wait(lambda: not _alive_in_group(make.pid), 5), _alive_in_group(make.pid)
    finally:
        with_survivors = _alive_in_group(make.pid)
        if with_survivors:
            os.killpg(make.pid, signal.SIGKILL)
        log.close()
