"""Set Material for MkDocs' own switch for its end-of-life banner (NO_MKDOCS_2_WARNING) in this environment.

Run: .venv/bin/python scripts/quiet_material.py   (`make`'s install step runs it)

Material prints the banner when its theme is imported by a plain `mkdocs` command, before any plugin or hook of the
site runs, so nothing in mkdocs.yml or the transformer-trace plugin can set the variable in time. A .pth file in the
environment's site-packages runs at every interpreter's start-up: it sets the variable unless it is already set, for
the programs of this environment only (`.venv/bin/mkdocs serve` as the README runs it). The commands of
`python -m transformer_trace` set it themselves.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

PTH_NAME = "transformer-trace-quiet-material.pth"
# one line that starts with "import": site.py runs it (a .pth file's other lines are paths)
PTH_LINE = 'import os; os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")\n'


def install(site_packages: Path | None = None) -> Path:
    folder = site_packages or Path(sysconfig.get_paths()["purelib"])
    pth = folder / PTH_NAME
    pth.write_text(PTH_LINE, encoding="utf-8")
    return pth


if __name__ == "__main__":
    print(f"wrote {install()}")
