"""Pages converted and indexed in a helper process (generator/site/parallel.py) give the very site MkDocs gives alone.

`mkdocs build` (through the transformer-trace plugin) and the serve process's pages rendered ahead hand a share of
their pages to a forked child. Every byte of the site must be what a build without it writes, warnings must still
reach `--strict`, the parent must do whatever the child did not, and the child must never outlive its parent.
"""

from __future__ import annotations

import gc
import hashlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from transformer_trace.site import parallel
from tests.conftest import BUILD_ONLY, ROOT

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or (os.cpu_count() or 1) < 2,
                                reason="the helper process runs only with fork and two cores or more")


def write_pages(docs: Path, words: str) -> None:
    """A small site with what report pages hold: headings, code with line numbers, math, tables, admonitions, links
    between pages and anchors, a page left out of search, and an image."""
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "index.md").write_text(f"# Home\n\nWelcome: {words}.\n\n[First](section/p0.md#details)\n", encoding="utf-8")
    for i in range(10):
        folder = docs / "section"
        folder.mkdir(exist_ok=True)
        front = "---\nsearch:\n  exclude: true\n---\n\n" if i == 3 else ""
        (folder / f"p{i}.md").write_text(front + textwrap.dedent(f"""\
            # Page {i}

            Some text about {words}, $x_{i} = {i}$ inline, and a block:

            $$
            y = \\sum_j x_j^{i}
            $$

            ## Details

            ```python linenums="{10 + i}" hl_lines="2"
            def page_{i}(x):
                return x * {i}  # {words}
            ```

            | a | b |
            | --- | ---: |
            | {words} | {i} |

            !!! note "Note {i}"
                See [the next page](p{(i + 1) % 10}.md#details) and [home](../index.md).

            ![a figure](../figure.png)
            """) + f"\n{'More words. ' * (40 * (i + 1))}\n", encoding="utf-8")
    shutil.copyfile(ROOT / "generator" / "assets" / "tt-report.css", docs / "figure.png")  # any bytes will do


NAV = "nav:\n  - index.md\n  - Section:\n" + "".join(f"    - section/p{i}.md\n" for i in range(10))


def config_for(tmp: Path, docs: Path, site: Path, extra: str = "") -> Path:
    nav = NAV + ("  - how-it-works.md\n  - notebooks/record-a-forward-pass.ipynb\n" if (docs / "notebooks").exists() else "")
    config = tmp / f"{site.name}.yml"
    config.write_text(f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: {docs}\nsite_dir: {site}\n{BUILD_ONLY}{nav}{extra}", encoding="utf-8")
    return config


def site_files(site: Path) -> dict[str, str]:
    """Every file of a built site by digest; the gzipped sitemap by its content (gzip stamps the time)."""
    import gzip

    out = {}
    for path in sorted(site.rglob("*")):
        if path.is_file():
            data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
            out[path.relative_to(site).as_posix()] = hashlib.sha256(data).hexdigest()
    return out


def build_in_process(config: Path, monkeypatch, helper: bool):
    """`mkdocs build` as the command runs it, in this process, with or without the helper."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    monkeypatch.setenv("TT_PAGE_HELPER", "1" if helper else "0")
    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")
    cfg = load_config(str(config))
    cfg.plugins.on_startup(command="build", dirty=False)
    try:
        build(cfg)
    finally:
        cfg.plugins.on_shutdown()


def test_a_build_with_the_helper_writes_what_mkdocs_alone_writes(tmp_path, monkeypatch, caplog):
    docs = tmp_path / "docs"
    write_pages(docs, "purple otters")
    for name in ("how-it-works.md", "notebooks"):  # a notebook page too (MkDocs-Jupyter's own render stays the parent's)
        (shutil.copytree if (ROOT / "docs" / name).is_dir() else shutil.copyfile)(ROOT / "docs" / name, docs / name)
    alone, helped = tmp_path / "alone", tmp_path / "helped"
    build_in_process(config_for(tmp_path, docs, alone), monkeypatch, helper=False)
    with caplog.at_level(logging.DEBUG, logger="transformer_trace"):
        build_in_process(config_for(tmp_path, docs, helped), monkeypatch, helper=True)
    taken = [r.getMessage() for r in caplog.records if r.getMessage().startswith("pages helper:")]
    assert len(taken) == 1 and not taken[0].startswith("pages helper: the HTML of 0 ") and not taken[0].endswith(" of 0"), taken
    assert site_files(helped) == site_files(alone)
    assert "purple" in (helped / "search" / "search_index.json").read_text(encoding="utf-8")
    assert gc.get_freeze_count() == 0  # what the build left out of garbage collection is handed back


@pytest.mark.parametrize("helper", ["0", "1"])
def test_warnings_of_pages_converted_by_the_helper_still_fail_a_strict_build(tmp_path, helper):
    docs = tmp_path / "docs"
    write_pages(docs, "broken links")
    for i in range(10):  # whichever process converts it, each page's broken link is a warning
        with (docs / "section" / f"p{i}.md").open("a", encoding="utf-8") as f:
            f.write(f"\n[nowhere](missing-{i}.md)\n")
    config = config_for(tmp_path, docs, tmp_path / "site", "strict: true\n")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-f", str(config)], capture_output=True, text=True,
                            cwd=tmp_path, env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "TT_PAGE_HELPER": helper})
    assert result.returncode != 0
    assert "Aborted with 10 warnings in strict mode" in result.stdout + result.stderr, result.stdout + result.stderr[-2000:]
    assert all(f"'missing-{i}.md'" in result.stderr for i in range(10))


def test_pages_are_shared_by_cost_each_share_in_the_sites_order():
    pages = [f"p{i}" for i in range(10)] + ["print"]  # one page as costly as the ten others, last, as print.md is
    cost = {**{f"p{i}": 10 for i in range(10)}, "print": 100}
    mine, theirs = parallel.split(pages, cost.__getitem__, 0.5)
    assert sorted([mine, theirs]) == [pages[:10], ["print"]]
    mine, theirs = parallel.split(pages[:10], cost.__getitem__, 0.3)
    assert len(theirs) == 3 and sorted(mine + theirs) == pages[:10]
    assert theirs == sorted(theirs) and mine == sorted(mine)


def test_objects_frozen_for_a_build_are_handed_back_to_the_collector_however_deep():
    with parallel.heap_frozen():
        frozen = gc.get_freeze_count()
        with parallel.heap_frozen():
            pass
        garbage = [[]]
        garbage[0].append(garbage)  # made inside: still collected meanwhile
        # the inner block must not thaw the outer one's objects (a frozen object freed meanwhile lowers the count a little)
        assert frozen > 0 and gc.get_freeze_count() > frozen // 2
    assert gc.get_freeze_count() == 0


def test_the_parent_does_what_the_helper_did_not_send():
    def work(send):
        send("first", {"value": 1})
        raise RuntimeError("the helper fails half-way")

    helper = parallel.Helper(work)
    try:
        assert helper.get("second") is None  # never sent: the caller does it itself
        assert helper.get("first") == {"value": 1}
    finally:
        helper.close()
    assert not Path(helper.dir).exists()


def test_a_stalled_helper_is_stopped_and_the_parent_does_its_work(monkeypatch):
    from tests.test_workers import alive

    monkeypatch.setattr(parallel, "STALLED_S", 0.2)
    helper = parallel.Helper(lambda send: time.sleep(60))  # as if it waited for a lock another thread held at the fork
    pid = helper.pid
    try:
        assert helper.get("page") is None
        assert helper.pid is None and alive({pid}) == set()
    finally:
        helper.close()


def test_the_helper_dies_with_its_parent(tmp_path):
    from tests.test_workers import alive, wait_gone

    script = ("import time\nfrom transformer_trace.site.parallel import Helper\n"
              "helper = Helper(lambda send: time.sleep(120))\nprint(helper.pid, flush=True)\ntime.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    child = set()
    try:
        child = {int(proc.stdout.readline())}
        assert alive(child) == child
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert wait_gone(child) == set(), "the helper outlived its parent"
    finally:
        for pid in alive(child):
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_pages_rendered_ahead_in_the_helper_give_what_a_full_build_gives(tmp_path, monkeypatch):
    """The serve process's path: pages rendered ahead from a staging folder (half of them in the helper), moved in,
    twice in a row (the second time, the nav of every page reflects state the helper sent back)."""
    from transformer_trace.site.warm_site import WarmSite

    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")
    docs, served = tmp_path / "docs", tmp_path / "served"
    write_pages(docs, "first words")
    monkeypatch.setenv("TT_PAGE_HELPER", "1")
    site = WarmSite(config_for(tmp_path, docs, served))
    try:
        assert site.update().kind == "full"
        for words in ("second words", "third words"):
            staging = tmp_path / words.replace(" ", "-")
            write_pages(staging, words)
            assert site.prerender(staging) == 11  # index.md and the ten pages
            write_pages(docs, words)
            update = site.update()
            assert update.kind == "pages" and update.reason == "11 rendered ahead", update
            reference = tmp_path / f"full-{words.split()[0]}"
            build_in_process(config_for(tmp_path, docs, reference), monkeypatch, helper=False)
            monkeypatch.setenv("TT_PAGE_HELPER", "1")
            assert site_files(served) == site_files(reference)
            assert words.split()[0] in (served / "search" / "search_index.json").read_text(encoding="utf-8")
    finally:
        site.close()
