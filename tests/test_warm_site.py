"""The serve process tells what changed in docs/ without reading every file again, and never misses a change."""

from __future__ import annotations

import os
import time
from pathlib import Path

from generator.site import warm_site


def test_unchanged_files_are_not_read_again_and_every_edit_is_seen(tmp_path, monkeypatch):
    monkeypatch.setattr(warm_site, "RACY_S", 0.0)  # no file counts as just written
    docs = tmp_path / "docs"
    (docs / "report").mkdir(parents=True)
    page, data = docs / "report" / "page.md", docs / "report" / "data.npy"
    page.write_text("first words\n", encoding="utf-8")
    data.write_bytes(b"\0" * 4096)
    known: dict = {}
    before = warm_site._digests(docs, known)
    read = []
    real_read_bytes = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: read.append(self.name) or real_read_bytes(self))
    assert warm_site._digests(docs, known) == before and read == []  # nothing changed: nothing read
    stat = page.stat()
    time.sleep(0.05)  # past the file system's timestamp granularity
    page.write_text("other words\n", encoding="utf-8")  # same size, in place
    os.utime(page, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the old modification time
    after = warm_site._digests(docs, known)
    assert read == ["page.md"]
    assert after["report/page.md"] != before["report/page.md"] and after["report/data.npy"] == before["report/data.npy"]


def test_a_file_written_just_now_is_read_every_time(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("hello\n", encoding="utf-8")
    known: dict = {}
    warm_site._digests(docs, known)
    assert known == {}  # changed within RACY_S: it may change again within the same timestamps
