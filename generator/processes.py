"""Processes this program forks die with the process that forked them, however it ends (SIGKILL included): the figure
workers (build.py), the pages helper of a site build (site/parallel.py), the template compiler (template_cache.py)."""

from __future__ import annotations

import os
import signal

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent: int) -> None:
    """In a child forked from process ``parent``: have Linux SIGKILL this process when its parent ends, and exit now
    if the parent already ended (between the fork and this call). Elsewhere than Linux the caller's own shutdown of
    its children is all there is."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no libc to load, or no prctl in it: not Linux
        pass
    if os.getppid() != parent:
        os._exit(1)
