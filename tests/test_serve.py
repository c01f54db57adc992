"""`python -m transformer_trace serve`: the regenerate API, the form in a real browser, live reload, Ctrl-C.

One server runs in a subprocess (as `make serve` runs it) on a free port, over a docs folder the CLI
generated into a temporary folder (the encoder-decoder and GPT reports); the tests talk to it over HTTP.
The last test stops it with SIGINT in the middle of a regeneration. The API's input rules, the port
option and the fallback of partial builds are checked in this process, without the server.
"""

from __future__ import annotations

import base64
import hashlib
import html
import http.client
import http.server
import io
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from transformer_trace.cli import main
from transformer_trace.reports import REPORTS
from transformer_trace.site.api import ApiError, build_request
from transformer_trace.site.forms import SiteForms
from transformer_trace.site.events import MAX_EVENT_STREAMS
from tests.conftest import BUILD_ONLY, ROOT

ED = "encoder-decoder"


# ----------------------------------------------------------------------------- helpers


def tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink() and "/." not in f"/{p.relative_to(folder)}"}


def html_text(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def request(url: str, path: str, body: bytes | None = None, headers: dict | None = None, method: str | None = None) -> tuple[int, dict | str]:
    req = urllib.request.Request(url.rstrip("/") + path, data=body, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=180) as response:
            status, raw, kind = response.status, response.read(), response.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        status, raw, kind = exc.code, exc.read(), exc.headers.get("Content-Type", "")
    return status, json.loads(raw) if kind.startswith("application/json") and raw else raw.decode("utf-8", "replace")  # HEAD: no body


def post_json(url: str, fields: dict, **headers) -> tuple[int, dict]:
    return request(url, "/api/regenerate", json.dumps(fields).encode(), {"Content-Type": "application/json", **headers})


def multipart(fields: dict, files: dict[str, tuple[str, bytes]]) -> tuple[bytes, str]:
    boundary = "tt-test-boundary-7f3a"
    out = io.BytesIO()
    for name, value in fields.items():
        out.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    for name, (filename, data) in files.items():
        out.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
                  f"Content-Type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n")
    out.write(f"--{boundary}--\r\n".encode())
    return out.getvalue(), f"multipart/form-data; boundary={boundary}"


def cli_message(argv: list[str], capsys) -> str:
    """The one line the CLI prints for ``argv`` (without its "error: " prefix)."""
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code
    assert code == 2
    line = capsys.readouterr().err.strip()
    assert line.startswith("error: ") and "\n" not in line
    return line[len("error: "):]


def wait_until_busy(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if request(url, "/api/status")[1]["busy"]:
            return
        time.sleep(0.02)
    raise AssertionError("the server never reported a regeneration in progress")


# ----------------------------------------------------------------------------- fixtures


class Server:
    def __init__(self, proc: subprocess.Popen, url: str, docs: Path, site: Path, stderr: Path) -> None:
        self.proc, self.url, self.docs, self.site, self.stderr = proc, url, docs, site, stderr


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Server:
    work = tmp_path_factory.mktemp("serve")
    docs, site = work / "docs", work / "site"
    for model in (ED, "gpt"):  # the CLI, as a user would
        assert main(["build", "--model", model, "--out", str(docs), "--device", "cpu", "-q"]) == 0
    for name in ("stylesheets", "notebooks"):  # copies: the server publishes no link to outside its project
        shutil.copytree(ROOT / "docs" / name, docs / name)
    for name in ("how-it-works.md", "benchmarks.md"):
        shutil.copyfile(ROOT / "docs" / name, docs / name)
    config = work / "mkdocs.yml"
    config.write_text(f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: {docs}\nsite_dir: {site}\n{BUILD_ONLY}", encoding="utf-8")
    stderr = work / "stderr.txt"
    proc = subprocess.Popen([sys.executable, "-m", "transformer_trace", "serve", "--port", "0", "--docs", str(docs), "--config", str(config), "-q"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr.open("wb"), text=True,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONFAULTHANDLER": "1"})
    line = proc.stdout.readline()  # "serving http://127.0.0.1:PORT/ (Ctrl-C stops)" once the site is built
    assert line.startswith("serving http://127.0.0.1:"), line + stderr.read_text()
    server = Server(proc, line.split()[1], docs, site, stderr)
    yield server
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        proc.wait(60)




# ----------------------------------------------------------------------------- static site


def test_static_site_shows_the_cli_command_and_no_form(served, browser):
    html = (served.site / ED / "index.html").read_text(encoding="utf-8")
    assert 'class="tt-regenerate"' in html and "tt-form" not in html
    assert "python -m transformer_trace build --model encoder-decoder --seed 7 --layer 1" in html_text(html)  # the default inputs
    from transformer_trace.pdf import serve as static_server

    with static_server(served.site) as url:  # a plain static host, as GitHub Pages would be
        page = browser.new_page()
        requests: list[str] = []
        problems: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
        for path in ("/", f"/{ED}/"):
            page.goto(url + path, wait_until="load")
            page.wait_for_timeout(300)
            assert page.locator(".tt-regenerate").is_visible()
            assert page.locator("form.tt-form").count() == 0
        assert "python -m transformer_trace build --model encoder-decoder" in page.locator(".tt-regenerate").inner_text()
        assert not [r for r in requests if "/api/" in r], "a static page must not call the API"
        assert not problems, problems
        page.close()


# ----------------------------------------------------------------------------- API


def test_status_lists_each_reports_fields_with_the_current_values(served):
    status, data = request(served.url, "/api/status")
    assert status == 200 and data["app"] == "transformer-trace" and data["busy"] is False
    models = {m["key"]: m for m in data["models"]}
    fields = {f["name"]: f for f in models[ED]["fields"]}
    assert list(fields) == ["src", "tgt", "seed", "layer"]
    assert fields["src"]["value"] == "hello from cairo egypt team project" and fields["seed"]["value"] == 7
    assert [f["name"] for f in models["vit"]["fields"]] == ["image", "seed", "layer"]
    assert models["vit"]["fields"][0]["type"] == "file"


def test_regenerate_rebuilds_the_changed_pages_with_the_new_words(served):
    index_before = json.loads((served.site / "search" / "search_index.json").read_text(encoding="utf-8"))
    status, data = post_json(served.url, {"model": ED, "src": "zebra quantum lantern", "tgt": "la lanterne", "seed": 7, "layer": 1, "device": "cpu"})
    assert status == 200, data
    assert data["seconds"] > 0 and data["site_build"] == "pages" and data["pages_rebuilt"] > 40
    overview = (served.site / ED / "index.html").read_text(encoding="utf-8")
    assert "zebra" in overview and "lanterne" in overview
    assert any("zebra" in p.read_text(encoding="utf-8") for p in (served.site / ED / "encoder").rglob("index.html"))
    # The search index stays complete: the same pages and sections, the rebuilt ones with their new text.
    index_after = json.loads((served.site / "search" / "search_index.json").read_text(encoding="utf-8"))
    assert sorted(e["location"] for e in index_after["docs"]) == sorted(e["location"] for e in index_before["docs"])
    assert any("zebra" in e["text"] for e in index_after["docs"] if e["location"].startswith(f"{ED}/"))
    assert index_after["config"] == index_before["config"]


def test_the_print_view_requested_at_once_after_a_regeneration_is_the_new_one(served):
    """The print view (every snapshot again) is rendered after the answer; a request for it sent on receipt of the
    answer waits until it is written, and never gets the last run's."""
    status, data = post_json(served.url, {"model": ED, "src": "walrus origami beacon", "tgt": "le phare", "device": "cpu"})
    assert status == 200, data
    status, page = request(served.url, f"/{ED}/print/")
    assert status == 200
    assert "walrus origami beacon" in html_text(page) and "zebra quantum lantern" not in html_text(page)
    assert page.count("tt-print-snapshot") == (served.site / ED / "print" / "index.html").read_text(encoding="utf-8").count("tt-print-snapshot") > 10
    status, index = request(served.url, "/search/search_index.json")
    assert status == 200 and any("walrus" in e["text"] for e in index["docs"] if e["location"].startswith(f"{ED}/"))


@pytest.mark.parametrize("fields, argv", [
    ({"seed": "abc"}, ["--seed", "abc"]),                    # argparse: not an integer
    ({"layer": 9}, ["--layer", "9"]),                         # the runner: out of range
    ({"src": "   "}, ["--src", "   "]),                       # the runner: empty sentence
    ({"heads": 3}, ["--heads", "3"]),                         # the runner: d_model not a multiple of heads
    ({"device": "tpu"}, ["--device", "tpu"]),                 # argparse: not a choice
], ids=["seed-not-int", "layer-out-of-range", "empty-sentence", "heads", "device"])
def test_bad_input_is_refused_with_the_clis_message_and_nothing_changes(served, capsys, tmp_path, fields, argv):
    docs_before, site_before = tree_digest(served.docs), tree_digest(served.site)
    status, data = post_json(served.url, {"model": ED, **fields})
    assert status == 400
    assert data == {"error": cli_message(["build", "--model", ED, *argv, "--out", str(tmp_path / "scratch"), "-q"], capsys)}
    assert tree_digest(served.docs) == docs_before and tree_digest(served.site) == site_before


def test_unknown_model_fields_and_bodies_are_refused(served, capsys, tmp_path):
    docs_before = tree_digest(served.docs)
    status, data = post_json(served.url, {"model": "gpt-9"})
    assert status == 400 and data["error"] == cli_message(["build", "--model", "gpt-9", "--out", str(tmp_path)], capsys)
    status, data = post_json(served.url, {"model": ED, "colour": "blue"})
    assert status == 400 and data["error"].startswith("unknown field 'colour' for encoder-decoder")
    status, data = post_json(served.url, {"model": "vit", "src": "a"})
    assert status == 400 and "unknown field 'src' for vit" in data["error"]
    status, data = post_json(served.url, {"model": "vit", "image": "/etc/passwd"})  # never a server-side path
    assert status == 400 and "multipart" in data["error"]
    status, data = post_json(served.url, {"model": ED, "out": "/tmp/elsewhere"})
    assert status == 400 and "unknown field 'out'" in data["error"]
    status, data = request(served.url, "/api/regenerate", b"{not json", {"Content-Type": "application/json"})
    assert status == 400 and "not valid JSON" in data["error"]
    status, data = request(served.url, "/api/regenerate", b"model=vit", {"Content-Type": "text/plain"})
    assert status == 415
    assert tree_digest(served.docs) == docs_before


def test_a_foreign_origin_is_refused(served):
    docs_before = tree_digest(served.docs)
    status, data = post_json(served.url, {"model": ED, "src": "from elsewhere"}, Origin="http://evil.example")
    assert status == 403 and "evil.example" in data["error"]
    port = served.url.rsplit(":", 1)[1].rstrip("/")
    status, data = post_json(served.url, {"model": ED, "layer": 9}, Origin=f"http://localhost:{port}")
    assert status == 400  # the server's own origin (either name) passes on to validation
    assert tree_digest(served.docs) == docs_before


@pytest.mark.parametrize("declared, said", [(21 * 1024 * 1024, "21 MB"), (10**40, "× 10^40 bytes")])
def test_an_oversized_upload_is_refused_before_its_body_is_read(served, declared, said):
    host, port = served.url.split("//")[1].rstrip("/").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.putrequest("POST", "/api/regenerate")
    conn.putheader("Content-Type", "multipart/form-data; boundary=x")
    conn.putheader("Content-Length", str(declared))
    conn.endheaders()  # no body is sent: the answer must come from the header alone
    response = conn.getresponse()
    assert response.status == 413
    error = json.loads(response.read())["error"]
    assert said in error and "more than the 20 MB limit" in error, error
    conn.close()


def test_a_second_concurrent_regeneration_gets_409(served):
    results: list[tuple[int, dict]] = []
    first = threading.Thread(target=lambda: results.append(post_json(served.url, {"model": ED, "src": "first of two", "device": "cpu"})))
    first.start()
    wait_until_busy(served.url)
    # Refused from the headers alone: an upload arriving during a regeneration is not read into memory.
    host, port = served.url.split("//")[1].rstrip("/").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.putrequest("POST", "/api/regenerate")
    conn.putheader("Content-Type", "multipart/form-data; boundary=x")
    conn.putheader("Content-Length", str(15 * 1024 * 1024))
    conn.endheaders()  # no body is sent: reading it first would leave this waiting
    response = conn.getresponse()
    assert (response.status, json.loads(response.read())) == (409, {"error": "a regeneration is already running"})
    conn.close()
    second = post_json(served.url, {"model": ED, "src": "second of two", "device": "cpu"})
    first.join(180)
    assert second == (409, {"error": "a regeneration is already running"})
    assert results[0][0] == 200, results
    assert "first" in (served.site / ED / "index.html").read_text(encoding="utf-8")


def test_unknown_routes_are_404(served):
    assert request(served.url, "/api/nothing")[0] == 404
    assert request(served.url, "/api/nothing", b"{}", {"Content-Type": "application/json"})[0] == 404
    status, body = request(served.url, "/no/such/page/")
    assert status == 404 and "404" in body
    assert request(served.url, "/api/regenerate")[0] == 405


def test_every_request_needs_this_servers_host(served):
    """DNS rebinding: a page on another site whose name now points at 127.0.0.1 sends its own Host."""
    port = served.url.rsplit(":", 1)[1].rstrip("/")
    for path in ("/", f"/{ED}/", "/search/search_index.json", "/api/status"):
        status, data = request(served.url, path, headers={"Host": f"rebound.example:{port}"})
        assert status == 403 and data["error"] == f"this server answers only for 127.0.0.1:{port} and localhost:{port}", path
    assert request(served.url, "/", headers={"Host": f"rebound.example:{port}"}, method="HEAD")[0] == 403
    status, data = post_json(served.url, {"model": ED, "layer": 9}, Host=f"127.0.0.1:{int(port) + 1}")
    assert status == 403
    host, _ = served.url.split("//")[1].rstrip("/").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.putrequest("GET", "/", skip_host=True)  # no Host at all
    conn.endheaders()
    assert conn.getresponse().status == 403
    conn.close()
    assert request(served.url, "/", headers={"Host": f"localhost:{port}"})[0] == 200
    assert request(served.url, "/")[0] == 200


def test_the_api_never_names_a_server_side_file_or_a_download(served, tmp_path):
    """Only the CLI may load weights from a path or download them: the API takes --weights random only,
    and answers the same whether or not a file of the given name exists."""
    docs_before = tree_digest(served.docs)
    refused = ("the API cannot name server-side files or download weights, so weights can only be random here; "
               "the CLI can: python -m transformer_trace build --weights ...")
    for weights in ("/etc/passwd", str(tmp_path / "no such file.pt"), "imagenet", "Random"):
        status, data = post_json(served.url, {"model": "vit", "weights": weights})
        assert (status, data) == (400, {"error": refused}), weights
    body, kind = multipart({"model": "vit", "weights": "/etc/passwd"}, {})
    assert request(served.url, "/api/regenerate", body, {"Content-Type": kind}) == (400, {"error": refused})
    assert tree_digest(served.docs) == docs_before
    forms = SiteForms.of(REPORTS)
    assert build_request({"model": "vit", "weights": "random"}, tmp_path, forms=forms).given == {"weights": "random"}
    with pytest.raises(ApiError, match="weights can only be random"):
        build_request({"model": "all", "weights": "imagenet"}, tmp_path, forms=forms)


def test_path_options_are_uploads_and_free_text_options_need_an_allow_list():
    """Generic rules, on options no report has yet: kind "path" is an upload, a free-text option of no
    declared kind takes only the api_values its declaration lists (none without)."""
    from dataclasses import dataclass, field
    from pathlib import Path as PathType
    from types import SimpleNamespace

    from transformer_trace.options import RunOptions, option
    from transformer_trace.site.forms import forms_of

    @dataclass(frozen=True)
    class FutureOptions(RunOptions):
        vocabulary: PathType | None = field(default=None, metadata=option("vocabulary file", kind="path"))
        tokenizer: str = field(default="bytes", metadata=option("bytes, or PATH to a tokenizer"))
        weights: str = field(default="random", metadata=option("random, imagenet or PATH", api_values=("random",)))
        width: int = field(default=8, metadata=option("model width", kind="positive"))
        size: str = field(default="s", metadata=option("size", choices=("s", "m")))
        note: str = field(default="", metadata=option("free text", kind="text"))

    form = forms_of({"future": SimpleNamespace(options=FutureOptions)})["future"]
    assert form["uploads"] == {"vocabulary"}
    assert form["values"] == {"tokenizer": (), "weights": ("random",)}
    assert set(form["options"]) == {"device", "vocabulary", "tokenizer", "weights", "width", "size", "note"}
    assert {key: (f["uploads"], f["values"]) for key, f in SiteForms.of(REPORTS).by_report.items()} == {
        ED: (set(), {}), "vit": ({"image"}, {"weights": ("random",)}), "gpt": (set(), {"weights": ("random",)}),
        "toy-vit": (set(), {})}  # its --weights has choices (seed, random) and --pixels is text: neither is a path


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_serve_refuses_a_port_out_of_range(capsys, port):
    message = cli_message(["serve", "--port", port], capsys)
    assert message.startswith("argument --port: ") and "port" in message[len("argument --port: "):]


def test_event_streams_are_capped(served):
    host, port = served.url.split("//")[1].rstrip("/").split(":")

    def open_stream() -> http.client.HTTPResponse:
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        conn.request("GET", "/api/events")
        response = conn.getresponse()
        conn.close()  # the response keeps the socket open until it is closed itself
        return response

    streams = [open_stream() for _ in range(MAX_EVENT_STREAMS)]
    try:
        assert [response.status for response in streams] == [200] * MAX_EVENT_STREAMS
        refused = open_stream()
        assert refused.status == 503 and "pages are following this server" in json.loads(refused.read())["error"]
        refused.close()
    finally:
        for response in streams:
            response.close()
    deadline = time.monotonic() + 10  # a closed stream gives its place back within about a second
    while True:
        response = open_stream()
        response.close()
        if response.status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert response.status == 200


def test_an_uploaded_image_regenerates_the_vit_report(served):
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 30, 30)).save(buffer, format="PNG")
    body, kind = multipart({"model": "vit", "vit_size": "tiny", "seed": "3", "device": "cpu", "weights": "random"},
                           {"image": ("red <box>.png", buffer.getvalue())})
    status, data = request(served.url, "/api/regenerate", body, {"Content-Type": kind})
    assert status == 200, data
    assert data["site_build"] == "full"  # a new report: new pages and navigation
    overview = (served.site / "vit" / "index.html").read_text(encoding="utf-8")
    assert "red <box>.png" in html.unescape(overview) and "<box>" not in overview  # the user's file name, literal
    command = html_text(overview.split("this command reproduces this run", 1)[1]).split("Run `make serve`", 1)[0]
    assert "--image 'red <box>.png'" in command and "uploaded" in command  # not the server's deleted copy
    assert "tt-upload" not in html.unescape(overview) and tempfile.gettempdir() not in command
    bad, kind = multipart({"model": "vit"}, {"image": ("notes.png", b"not an image at all")})
    status, data = request(served.url, "/api/regenerate", bad, {"Content-Type": kind})
    assert status == 400 and data["error"].startswith("notes.png is not a JPEG, PNG, WebP, GIF or BMP image")  # the CLI's words, the user's file name


def test_a_new_prompt_regenerates_the_gpt_report(served):
    status, data = post_json(served.url, {"model": "gpt", "prompt": "hi there", "device": "cpu"})
    assert status == 200, data
    assert data["reports"] == ["gpt"] and data["site_build"] == "pages" and data["pages_rebuilt"] > 10
    assert "hi there" in html_text((served.site / "gpt" / "index.html").read_text(encoding="utf-8"))
    gpt = next(m for m in request(served.url, "/api/status")[1]["models"] if m["key"] == "gpt")
    assert {f["name"]: f["value"] for f in gpt["fields"]}["prompt"] == "hi there"


# ----------------------------------------------------------------------------- partial builds on another MkDocs


def _break_get_context(monkeypatch):
    """A MkDocs whose mkdocs.commands.build has no get_context, as generator/site/warm_site.py sees it. Only the
    package's attribute is swapped: MkDocs's own build keeps its functions, as a later release has its own."""
    import mkdocs.commands
    import mkdocs.commands.build as real

    later = types.ModuleType(real.__name__)
    later.__dict__.update({name: value for name, value in vars(real).items() if name != "get_context"})
    monkeypatch.setattr(mkdocs.commands, "build", later)


@pytest.mark.parametrize("render_ahead", [False, True], ids=["no-get_context", "no-get_context-ahead"])
def test_a_mkdocs_without_the_internals_gets_full_builds(tmp_path, monkeypatch, caplog, render_ahead):
    """Partial builds run MkDocs' steps for one page; a MkDocs 1.x whose page API changed must still update the site, fully."""
    from transformer_trace.site.warm_site import WarmSite

    docs, site_dir = tmp_path / "docs", tmp_path / "site"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nfirst words\n", encoding="utf-8")
    (docs / "other.md").write_text("# Other\n\nunchanged\n", encoding="utf-8")
    config = tmp_path / "mkdocs.yml"
    config.write_text(f"site_name: t\ndocs_dir: {docs}\nsite_dir: {site_dir}\nnav: [index.md, other.md]\ntheme: material\n", encoding="utf-8")
    site = WarmSite(config)
    try:
        assert site.update().kind == "full"
        (docs / "index.md").write_text("# Home\n\nsecond words\n", encoding="utf-8")
        assert site.update().kind == "pages"  # this MkDocs has them: page by page
        _break_get_context(monkeypatch)
        with caplog.at_level(logging.WARNING, logger="transformer_trace"):
            if render_ahead:
                staging = tmp_path / "staging"
                staging.mkdir()
                (staging / "index.md").write_text("# Home\n\nthird words\n", encoding="utf-8")
                assert site.prerender(staging) == 0
                assert "second words" in (site_dir / "index.html").read_text(encoding="utf-8")  # the site untouched
            (docs / "index.md").write_text("# Home\n\nthird words\n", encoding="utf-8")
            update = site.update()
        assert update.kind == "full" and update.reason.startswith("partial builds need MkDocs internals this version changed")
        assert "third words" in (site_dir / "index.html").read_text(encoding="utf-8")
        assert [r.getMessage() for r in caplog.records if "full build" in r.getMessage()] == [f"site: {update.reason}; every update is a full build from now on"]
    finally:
        site.close()


# ----------------------------------------------------------------------------- the form in a real browser


def test_the_form_regenerates_and_reloads_every_open_page(served, browser):
    page, other = browser.new_page(), browser.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    other.goto(served.url + f"{ED}/questions/", wait_until="load")
    other.evaluate("() => { window.__before_reload = true; }")
    page.goto(served.url + f"{ED}/", wait_until="load")
    form = page.locator("form.tt-form")
    form.wait_for(timeout=15_000)
    assert page.locator(".tt-regenerate").count() == 0  # the CLI block was replaced
    src = page.get_by_label("Source sentence")
    current = {f["name"]: f["value"] for f in request(served.url, "/api/status")[1]["models"][0]["fields"]}
    assert src.input_value() == current["src"]
    # A bad layer: the CLI's message in the alert region, the field marked invalid, the page untouched.
    layer = page.get_by_label("Layer traced")
    layer.fill("")
    layer.type("9")
    layer.press("Enter")  # keyboard submit
    alert = page.get_by_role("alert")
    alert.filter(has_text="out of range").wait_for(timeout=60_000)
    assert "--layer 9 is out of range" in alert.inner_text()
    assert layer.get_attribute("aria-invalid") == "true"
    layer.fill("1")
    src.fill("")
    src.type("violet harbour sings", delay=10)
    page.evaluate("() => { window.__before_reload = true; }")
    page.get_by_role("button", name="Regenerate").click()
    page.locator(".tt-status").filter(has_text="Working").wait_for(timeout=5_000)  # progress is shown
    assert page.get_by_role("button", name="Regenerate").is_disabled()
    page.wait_for_function("() => window.__before_reload === undefined", timeout=120_000, polling=100)  # reloaded
    page.wait_for_load_state("load")
    inputs = page.locator("table").filter(has_text="Source").first
    assert "violet" in inputs.inner_text() and "harbour" in inputs.inner_text()
    page.locator("form.tt-form").wait_for(timeout=15_000)
    assert page.get_by_label("Source sentence").input_value() == "violet harbour sings"
    # The other open page reloaded by itself (live reload).
    other.wait_for_function("() => window.__before_reload === undefined", timeout=30_000)
    # The landing page has the form too, with a choice of report.
    page.goto(served.url, wait_until="load")
    page.locator("form.tt-form").wait_for(timeout=15_000)
    assert page.get_by_label("Report").count() == 1
    page.get_by_label("Report").select_option("vit")
    assert page.get_by_label("Image").get_attribute("type") == "file"
    # Drag and drop an image onto the upload field, then regenerate the ViT from the landing page.
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (48, 32), (20, 120, 220)).save(buffer, format="PNG")
    page.evaluate("""(b64) => {
        const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
        const data = new DataTransfer();
        data.items.add(new File([bytes], "dropped photo.png", {type: "image/png"}));
        const zone = document.querySelector(".tt-drop");
        zone.dispatchEvent(new DragEvent("dragover", {dataTransfer: data, bubbles: true, cancelable: true}));
        zone.dispatchEvent(new DragEvent("drop", {dataTransfer: data, bubbles: true, cancelable: true}));
    }""", base64.b64encode(buffer.getvalue()).decode())
    assert page.locator(".tt-chosen").inner_text() == "Chosen: dropped photo.png"
    page.evaluate("() => { window.__before_reload = true; }")
    page.get_by_role("button", name="Regenerate").click()
    page.wait_for_function("() => window.__before_reload === undefined", timeout=180_000, polling=100)
    assert "dropped photo.png" in html_text((served.site / "vit" / "index.html").read_text(encoding="utf-8"))
    assert not problems, problems
    page.close()
    other.close()


def test_partial_builds_give_the_site_a_full_build_gives(served, tmp_path):
    """After the regenerations above (pages rendered ahead, half of them in a helper process, pages rebuilt, one full
    build), every page and the search index are what `mkdocs build` makes of the same docs folder, on its own (no
    helper process: MkDocs alone)."""
    for report in (ED, "gpt"):  # held until the print views rendered after the last answers are written
        assert request(served.url, f"/{report}/print/")[0] == 200
    config = tmp_path / "mkdocs.yml"
    config.write_text((served.docs.parent / "mkdocs.yml").read_text(encoding="utf-8").replace(f"site_dir: {served.site}", f"site_dir: {tmp_path / 'site'}"), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-f", str(config)], capture_output=True, text=True,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "TT_PAGE_HELPER": "0"})
    assert result.returncode == 0, result.stderr[-2000:]
    full, partial = tmp_path / "site", served.site
    pages = sorted(str(p.relative_to(full)) for p in full.rglob("*.html"))
    assert pages == sorted(str(p.relative_to(partial)) for p in partial.rglob("*.html"))
    assert [p for p in pages if (full / p).read_bytes() != (partial / p).read_bytes()] == []
    index = [json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8")) for site in (full, partial)]
    assert index[0]["config"] == index[1]["config"]
    assert sorted(map(json.dumps, index[0]["docs"])) == sorted(map(json.dumps, index[1]["docs"]))


# ----------------------------------------------------------------------------- hostile requests, one line each


def test_a_foreign_origin_is_refused_on_every_request_pages_included(served):
    port = served.url.rsplit(":", 1)[1].rstrip("/")
    for path in ("/", f"/{ED}/", "/api/status", "/search/search_index.json"):
        status, data = request(served.url, path, headers={"Origin": "http://evil.example"})
        assert status == 403 and "evil.example" in data["error"], path
    assert request(served.url, "/", headers={"Origin": "null"}, method="HEAD")[0] == 403
    assert request(served.url, "/", headers={"Origin": f"http://localhost:{port}"})[0] == 200
    assert request(served.url, "/api/status", headers={"Origin": f"http://127.0.0.1:{port}"})[0] == 200


@pytest.mark.parametrize("body, message", [
    (b'{"model": "encoder-decoder", "src": "a", "src": "b"}', "the field 'src' is given twice"),
    (b'{"model": "encoder-decoder", "model": "gpt"}', "the field 'model' is given twice"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b'{"model": "encoder-decoder", "src": "lone \\ud800 surrogate"}', "argument --src: is not valid UTF-8 text"),
    (b'{"model": "gpt", "prompt": "\\udfff"}', "argument --prompt: is not valid UTF-8 text"),
], ids=["repeated field", "repeated model", "deep nesting", "lone surrogate src", "lone surrogate prompt"])
def test_malformed_json_is_refused_in_one_line(served, body, message):
    docs_before = tree_digest(served.docs)
    status, data = request(served.url, "/api/regenerate", body, {"Content-Type": "application/json"})
    assert status == 400 and message in data["error"] and "\n" not in data["error"], data
    assert tree_digest(served.docs) == docs_before


def test_uploads_are_refused_consistently_in_one_line(served):
    from PIL import Image

    png = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 30, 30)).save(png, format="PNG")
    docs_before = tree_digest(served.docs)
    two = b"".join(multipart({"model": "vit"}, {"image": ("a.png", png.getvalue())})[0].rsplit(b"--tt-test-boundary-7f3a--", 1)[0:1])
    two += (b'--tt-test-boundary-7f3a\r\nContent-Disposition: form-data; name="image"; filename="b.png"\r\n\r\n'
            + png.getvalue() + b"\r\n--tt-test-boundary-7f3a--\r\n")
    status, data = request(served.url, "/api/regenerate", two, {"Content-Type": "multipart/form-data; boundary=tt-test-boundary-7f3a"})
    assert (status, data) == (400, {"error": "the field 'image' is given twice"})
    eps = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\nshowpage\n"
    long_name = "é" * 300 + ".eps"
    body, kind = multipart({"model": "vit", "vit_size": "tiny"}, {"image": (long_name, eps)})
    status, data = request(served.url, "/api/regenerate", body, {"Content-Type": kind})
    assert status == 400 and "is not a JPEG, PNG, WebP, GIF or BMP image" in data["error"], data
    assert data["error"].split(" is not")[0].endswith("éé.eps") and "tt-upload" not in data["error"]
    assert tempfile.gettempdir() not in data["error"]
    assert tree_digest(served.docs) == docs_before


def test_a_hand_edited_page_gets_an_answer_the_browser_can_act_on(served):
    page = served.docs / ED / "questions.md"
    original = page.read_bytes()
    page.write_text("my answers", encoding="utf-8")
    try:
        status, data = post_json(served.url, {"model": ED, "src": "after a hand edit", "device": "cpu"})
        assert status == 400 and "edited by hand" in data["error"] and str(page) in data["error"]
        assert '"force": true' in data["error"] and "--force" not in data["error"]
        assert page.read_text(encoding="utf-8") == "my answers"
        status, data = post_json(served.url, {"model": ED, "src": "after a hand edit", "device": "cpu", "force": True})
        assert status == 200, data
        assert page.read_bytes() != b"my answers"
    finally:
        if page.read_bytes() == b"my answers":
            page.write_bytes(original)


def test_a_link_to_outside_the_project_is_not_published(tmp_path):
    from transformer_trace.errors import UserError
    from transformer_trace.site.server import WarmServer, refuse_links_outside

    docs = tmp_path / "project" / "docs"
    (docs / "notes").mkdir(parents=True)
    config = tmp_path / "project" / "mkdocs.yml"
    config.write_text("site_name: x\n", encoding="utf-8")
    (tmp_path / "secret.md").write_text("not for the web", encoding="utf-8")
    (docs / "notes" / "inside.md").symlink_to(config)  # inside the project: fine
    state = WarmServer(docs, config, reports=REPORTS)
    refuse_links_outside(state.docs, state.config.parent)
    (docs / "notes" / "leak.md").symlink_to(tmp_path / "secret.md")
    with pytest.raises(UserError, match=r"leak.md: a symbolic link to a place outside the project"):
        refuse_links_outside(state.docs, state.config.parent)
    result = subprocess.run([sys.executable, "-m", "transformer_trace", "serve", "--port", "0", "--docs", str(docs), "--config", str(config), "-q"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "outside the project" in result.stderr, result.stderr


# ----------------------------------------------------------------------------- a slow client (in this process)


@pytest.fixture()
def quick_server(tmp_path, monkeypatch):
    """The HTTP layer of `serve` in this process, with a 1.5 s body deadline and a regeneration that takes 0.2 s."""
    import transformer_trace.site.http_handler
    import transformer_trace.site.server as serve_module

    monkeypatch.setattr(transformer_trace.site.http_handler, "BODY_TIMEOUT", 1.5)
    (tmp_path / "site").mkdir()
    state = serve_module.WarmServer(tmp_path / "docs", tmp_path / "mkdocs.yml", reports=REPORTS)
    state.site = types.SimpleNamespace(site=tmp_path / "site", close=lambda: None)
    state._regenerate = lambda fields, files: time.sleep(0.2) or {"seconds": 0.2, "fields": dict(fields)}
    state._watch = lambda: None  # no docs folder to follow
    url = state.start_http(0)
    worker = threading.Thread(target=lambda: state.jobs.run_forever(idle=state._watch), daemon=True)
    worker.start()
    yield state, url
    state.jobs.stop()
    state.stop()


def _slow_post(port: int, body: bytes, declared: int, pause: float) -> tuple[str, float]:
    """POST ``declared`` bytes of JSON, sending ``body`` a byte every ``pause`` s until an answer comes; the answer
    and the seconds it took to come."""
    import select
    import socket

    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(f"POST /api/regenerate HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {declared}\r\n\r\n".encode())
        for i in range(len(body)):
            if select.select([sock], [], [], 0)[0]:  # answered
                break
            sock.sendall(body[i:i + 1])
            time.sleep(pause)
        select.select([sock], [], [], 30)
        seconds = time.monotonic() - started
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer.decode(), seconds


def test_a_slow_client_is_cut_off_by_one_deadline_and_holds_no_lock(quick_server):
    state, url = quick_server
    port = int(url.rsplit(":", 1)[1].rstrip("/"))
    answers = []
    trickle = threading.Thread(target=lambda: answers.append(_slow_post(port, b'{"model": "gpt"}' + b" " * 23, 40, 0.25)))
    trickle.start()
    time.sleep(0.3)
    status, data = post_json(url, {"model": "gpt"})  # not held up by the slow body: no lock is taken while it arrives
    assert status == 200, data
    trickle.join(30)
    answer, seconds = answers[0]
    assert " 400 " in answer.splitlines()[0] and seconds < 5, answer  # one deadline for the whole body, not per read
    received = int(re.search(r"ended after (\d+) of its 40 bytes", answer).group(1))
    assert 3 <= received <= 10


def test_at_most_four_bodies_arrive_at_once(quick_server):
    """Bodies are read before the lock is taken, so how many are held in memory at once is bounded."""
    import socket

    state, url = quick_server
    port = int(url.rsplit(":", 1)[1].rstrip("/"))
    slow = []
    for _ in range(4):
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        sock.sendall(f"POST /api/regenerate HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: 100\r\n\r\n{{".encode())
        slow.append(sock)
    time.sleep(0.3)
    try:
        status, data = post_json(url, {"model": "gpt"})
        assert status == 503 and "4 requests are already sending their bodies" in data["error"]
        time.sleep(1.5)  # their deadline passes: room again
        assert post_json(url, {"model": "gpt"})[0] == 200
    finally:
        for sock in slow:
            sock.close()


def test_the_bytes_received_are_counted_when_a_body_stops(quick_server):
    state, url = quick_server
    port = int(url.rsplit(":", 1)[1].rstrip("/"))
    answer, _ = _slow_post(port, b'{"model": "gpt"', 20, 0)  # 15 of 20 bytes, then silence
    assert "the request body ended after 15 of its 20 bytes" in answer, answer


# ----------------------------------------------------------------------------- Ctrl-C


def test_ctrl_c_during_a_regeneration_stops_cleanly(served):
    answers: list = []

    def regenerate():
        try:
            answers.append(post_json(served.url, {"model": ED, "src": "interrupted mid way", "device": "cpu"}))
        except OSError as exc:
            answers.append(exc)

    client = threading.Thread(target=regenerate)
    client.start()
    wait_until_busy(served.url)
    time.sleep(0.3)  # inside the build
    served.proc.send_signal(signal.SIGINT)
    try:
        code = served.proc.wait(60)
    except subprocess.TimeoutExpired:  # where it hangs: the fault handler writes every thread's stack on SIGABRT
        served.proc.send_signal(signal.SIGABRT)
        served.proc.wait(30)
        pytest.fail("serve did not stop within 60 s of a Ctrl-C:\n" + served.stderr.read_text(errors="replace")[-6000:])
    client.join(30)
    err = served.stderr.read_text(encoding="utf-8", errors="replace")
    assert code in (0, 130), err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len([line for line in lines if line.startswith(("stopped", "interrupted"))]) == 1, err
    assert lines[-1].startswith(("stopped", "interrupted"))
    assert not [p.name for p in served.docs.iterdir() if p.name.startswith((".staging-", ".trash-"))]


def test_a_client_gone_before_its_answer_is_not_reported_and_another_failure_is_one_log_line(capsys, caplog):
    from transformer_trace.site.http_handler import QuietServer

    server = QuietServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    try:
        for gone in (BrokenPipeError(32, "Broken pipe"), ConnectionResetError(104, "Connection reset by peer")):
            try:
                raise gone
            except ConnectionError:
                server.handle_error(None, ("127.0.0.1", 50000))
        assert capsys.readouterr().err == "" and not caplog.records
        try:
            raise ValueError("bad state")
        except ValueError:
            server.handle_error(None, ("127.0.0.1", 50000))
        assert "Traceback" not in capsys.readouterr().err
        assert [r.getMessage() for r in caplog.records] == ["site: a request from 127.0.0.1 failed: ValueError: bad state"]
    finally:
        server.server_close()
