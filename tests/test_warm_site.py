"""The serve process tells what changed in docs/ without reading every file again, and never misses a change."""

from __future__ import annotations

import os
import time
from pathlib import Path

from transformer_trace.site import page_render, warm_site


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


# ----------------------------------------------------------------------------- the print views, finished after the answer

PRINT_FRONT = "---\nsearch:\n  exclude: true\n---\n\n"


def _small_site(tmp_path: Path, words: str) -> tuple[Path, Path, Path]:
    docs, site = tmp_path / "docs", tmp_path / "site"
    (docs / "report").mkdir(parents=True, exist_ok=True)
    (docs / "index.md").write_text(f"# Home\n\n{words}\n", encoding="utf-8")
    (docs / "other.md").write_text("# Other\n\nunchanged\n", encoding="utf-8")
    (docs / "report" / "print.md").write_text(f"{PRINT_FRONT}# Full report\n\nevery snapshot: {words}\n", encoding="utf-8")
    config = tmp_path / "mkdocs.yml"
    config.write_text(f"site_name: t\ndocs_dir: {docs}\nsite_dir: {site}\nnav: [index.md, other.md, report/print.md]\n"
                      "theme: material\nplugins: [search]\n", encoding="utf-8")
    return docs, site, config


def _full_build_of(config: Path, site: Path) -> dict[str, bytes]:
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    cfg = load_config(str(config), site_dir=str(site))
    cfg.plugins.on_startup(command="build", dirty=False)
    try:
        build(cfg)
    finally:
        cfg.plugins.on_shutdown()
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in sorted(site.rglob("*.html"))}


def test_a_print_view_is_finished_after_the_update_and_held_until_then(tmp_path, monkeypatch):
    """update() returns once the pages a reader browses are written; the print view is rendered after it, and a
    request for it (or for the search index) waits until it is current: never the page of the last run."""
    import threading

    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")
    docs, site_dir, config = _small_site(tmp_path, "first words")
    site = warm_site.WarmSite(config)
    gate = threading.Event()  # the print view's rendering waits on it: the test decides when it ends
    real_render = page_render.render_page

    def render(page, *args):
        if page.file.src_uri == "report/print.md":
            gate.wait()
        return real_render(page, *args)

    try:
        assert site.update().kind == "full"
        _small_site(tmp_path, "second words")
        monkeypatch.setattr(page_render, "render_page", render)
        update = site.update()
        assert update.kind == "pages" and update.later == ["report/print.md"]
        assert sorted(update.pages) == ["index.md", "report/print.md"]
        assert "second words" in (site_dir / "index.html").read_text(encoding="utf-8")
        seen: dict[str, str] = {}

        def read(name: str, path: Path) -> None:
            site.wait_current(path)
            seen[name] = path.read_text(encoding="utf-8") if path.is_file() else (path / "index.html").read_text(encoding="utf-8")

        readers = {name: threading.Thread(target=read, args=(name, path)) for name, path in
                   [("print", site_dir / "report" / "print"), ("search", site_dir / "search" / "search_index.json"),
                    ("home", site_dir / "index.html")]}
        for reader in readers.values():
            reader.start()
        readers["home"].join(30)
        assert not readers["home"].is_alive() and "second words" in seen["home"]  # not held: it is current
        readers["print"].join(0.2)
        assert readers["print"].is_alive() and readers["search"].is_alive()  # held while the print view renders
        gate.set()
        for reader in readers.values():
            reader.join(30)
        assert "second words" in seen["print"] and "first words" not in seen["print"]
        site.settle()
        assert _full_build_of(config, tmp_path / "reference") == {p.relative_to(site_dir).as_posix(): p.read_bytes()
                                                                   for p in sorted(site_dir.rglob("*.html"))}
    finally:
        gate.set()
        site.close()


def test_a_print_view_whose_title_changed_gives_a_full_build_after_the_update(tmp_path, monkeypatch):
    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")
    docs, site_dir, config = _small_site(tmp_path, "first words")
    site = warm_site.WarmSite(config)
    try:
        assert site.update().kind == "full"
        (docs / "report" / "print.md").write_text(f"{PRINT_FRONT}# Another title\n\nnew words\n", encoding="utf-8")
        update = site.update()
        assert update.later == ["report/print.md"]
        site.wait_current(site_dir / "report" / "print" / "index.html")
        assert "Another title" in (site_dir / "other" / "index.html").read_text(encoding="utf-8")  # every page's navigation
        site.settle()
        assert site.update().kind == "none"
        assert _full_build_of(config, tmp_path / "reference") == {p.relative_to(site_dir).as_posix(): p.read_bytes()
                                                                   for p in sorted(site_dir.rglob("*.html"))}
    finally:
        site.close()
