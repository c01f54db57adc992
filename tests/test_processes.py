"""A process this program forks dies with the process that forked it (generator/processes.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from transformer_trace.processes import die_with_parent


def _gone(pid: int) -> bool:
    """Whether ``pid`` ended (a zombie no one reaped yet counts as ended)."""
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def test_a_child_whose_parent_already_ended_exits_at_once():
    pid = os.fork()
    if pid == 0:  # the child: told its parent is another process, as after that parent ended
        die_with_parent(os.getppid() + 1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 1


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_child_is_killed_when_its_parent_is_sigkilled():
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import os, time
        from transformer_trace.processes import die_with_parent
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            die_with_parent(parent)
            time.sleep(60)
            os._exit(0)
        print(pid, flush=True)
        time.sleep(60)
        """)], stdout=subprocess.PIPE, text=True)
    child = None
    try:
        child = int(parent.stdout.readline())
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + 10
        while not _gone(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(child)
    finally:
        parent.kill()
        if child is not None and not _gone(child):  # the failure above: not left behind either
            os.kill(child, signal.SIGKILL)


CTRL_C_DURING_A_FORK = """
import os, signal, sys
from transformer_trace.processes import signals_held_over_fork


def ctrl_c_in_the_hooks():  # a Ctrl-C that lands while the at-fork hooks run, as logging's lock release does
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(100_000):  # Python runs the signal's handler here, inside the hook
        pass


os.register_at_fork(after_in_parent=ctrl_c_in_the_hooks)
try:
    if sys.argv[1] == "held":
        with signals_held_over_fork():
            pid = os.fork()
    else:
        pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    print("went on")
except KeyboardInterrupt:
    print("interrupted")
"""


@pytest.mark.parametrize("how", ["held", "bare"])
def test_a_ctrl_c_during_a_fork_is_raised_after_it_where_a_bare_fork_loses_it(how):
    done = subprocess.run([sys.executable, "-c", CTRL_C_DURING_A_FORK, how], capture_output=True, text=True,
                          timeout=60)
    if how == "held":
        assert (done.stdout.strip(), done.stderr) == ("interrupted", ""), done.stderr
    else:  # why the hold exists: Python prints the KeyboardInterrupt raised in a hook and drops it
        assert done.stdout.strip() == "went on" and "Exception ignored" in done.stderr, (done.stdout, done.stderr)
