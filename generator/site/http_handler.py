"""The HTTP side of `python -m transformer_trace serve`: the request handler (routing, the Host and Origin checks,
request bodies read within one deadline, the built site's files with live reload injected) and the listening socket.

The endpoints and their answers are described in generator/site/server.py.
"""

from __future__ import annotations

import http.server
import logging
import os
import socket
import sys
import threading
import time
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from transformer_trace.errors import UserError
from transformer_trace.options import readable_size  # torch-free
from transformer_trace.site.api import BUSY, MAX_BODIES, MAX_UPLOAD, ApiError, IncompleteBody, parse_body
from transformer_trace.site.events import EventStream, ServerRequestHandler

if TYPE_CHECKING:
    from transformer_trace.site.server import WarmServer
    from transformer_trace.site.warm_site import WarmSite

log = logging.getLogger("transformer_trace")

BODY_TIMEOUT = 30.0  # seconds the whole of a request body may take to arrive (one deadline, not per read)

LIVE_RELOAD = """<script>/* added by `python -m transformer_trace serve`: live reload and the regenerate form */
(function(){if(window.ttServe)return;var s=window.ttServe={busy:false,listeners:[]};
function connect(){var es=new EventSource("/api/events");
es.addEventListener("reload",function(){if(!s.busy)location.reload();});
es.addEventListener("progress",function(e){var d=JSON.parse(e.data);s.listeners.forEach(function(f){f(d);});});
es.onerror=function(){es.close();setTimeout(connect,2000);};}
connect();})();</script>"""


# The listening sockets of this process: a process forked from it (the figure workers) closes its copies at once, so
# that it never holds this server's port, whatever becomes of it or of this process.
_LISTENING: set[socket.socket] = set()


def _close_listening_sockets() -> None:
    for sock in list(_LISTENING):
        try:
            sock.close()  # the child's copy only: the server's socket stays open
        except OSError:
            pass
    _LISTENING.clear()


@cache
def _close_listening_sockets_in_forked_children() -> None:
    os.register_at_fork(after_in_child=_close_listening_sockets)  # once per process


class QuietServer(http.server.ThreadingHTTPServer):
    """socketserver prints a traceback for any error in a request thread. A client that went away (a browser tab
    closed, a poll that timed out) before its answer was written is normal for a local server: nothing to say. Any
    other failure is one log line, as everything else this server reports."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError):  # BrokenPipeError, ConnectionResetError, ConnectionAbortedError
            return
        log.warning("site: a request from %s failed: %s: %s", client_address[0], type(exc).__name__, exc)


def listen(state: WarmServer, port: int) -> http.server.ThreadingHTTPServer:
    """Serve ``state``'s site and API on 127.0.0.1:``port`` from a daemon thread."""
    _close_listening_sockets_in_forked_children()
    handler = type("Handler", (Handler,), {"server_state": state})
    try:
        httpd = QuietServer(("127.0.0.1", port), handler)
    except OSError as exc:
        raise UserError(f"cannot listen on 127.0.0.1:{port} ({exc.strerror or exc}); choose another --port") from None
    httpd.daemon_threads = True
    _LISTENING.add(httpd.socket)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True, name="http").start()
    return httpd


def close(httpd: http.server.ThreadingHTTPServer) -> None:
    httpd.shutdown()
    _LISTENING.discard(httpd.socket)
    httpd.server_close()


class _Bodies(ServerRequestHandler):
    """Request bodies, read within BODY_TIMEOUT in all, or refused unread."""

    def _read_body(self, size: int) -> bytes:
        """The request body, all of it within BODY_TIMEOUT in total (not per read: a client that sends a byte
        now and then must not keep a connection, and its memory, for ever)."""
        deadline = time.monotonic() + BODY_TIMEOUT
        chunks, received = [], 0
        try:
            while received < size:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.connection.settimeout(left)
                chunk = self.rfile.read1(min(size - received, 1 << 16))
                if not chunk:
                    break
                chunks.append(chunk)
                received += len(chunk)
        except OSError:  # a timeout or a reset: what arrived is counted below
            pass
        finally:
            self.connection.settimeout(None)
        if received < size:
            late = time.monotonic() >= deadline
            raise IncompleteBody(f"the request body ended after {received} of its {size} bytes"
                                 + (f" (it must arrive within {BODY_TIMEOUT:g} s)" if late else ""), size - received)
        return b"".join(chunks)

    def _refuse_unread(self, size: int, status: int, data: dict[str, Any]) -> None:
        """Answer without reading the body, then read and throw away what the client still sends of it, a
        chunk at a time for at most 2 s: closing a socket with unread data resets the connection, and the
        client could lose the answer with it."""
        self._json(status, data)
        self.close_connection = True
        self.wfile.flush()
        deadline = time.monotonic() + 2.0
        try:
            while size > 0 and time.monotonic() < deadline:
                self.connection.settimeout(max(0.05, deadline - time.monotonic()))
                chunk = self.connection.recv(min(size, 65536))
                if not chunk:
                    break
                size -= len(chunk)
        except OSError:
            pass


class _SiteFiles(ServerRequestHandler):
    """The built site's files, live reload added to every HTML page."""

    def _static(self, head: bool) -> None:
        """A file of the built site, read whole under the site's read lock (never half of a rebuild), and
        current: a page
        the site is still finishing after a regeneration's answer (WarmSite.update) is read once it is written."""
        path = urlsplit(self.path).path
        state = self.server_state
        while True:
            with state.site_lock.read():
                target = Path(self.translate_path(self.path))
                held = _served(state).held(target)
                if held is None:
                    if target.is_dir():
                        if not path.endswith("/"):
                            self.send_response(301)
                            self.send_header("Location", path + "/")
                            self.send_header("Content-Length", "0")
                            self.end_headers()
                            return
                        target = target / "index.html"
                    status = 200
                    if not target.is_file():
                        status, target = 404, Path(self.directory) / "404.html"
                    try:
                        body = target.read_bytes()
                    except OSError:
                        body, target = b"not found", Path("404.txt")
                    break
            held.wait()  # outside the lock: finishing may need to build fully, under the write lock
        content_type = self.guess_type(str(target))
        if target.suffix == ".html":
            body = _inject(body)
            content_type = "text/html; charset=utf-8"
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)



class Handler(_Bodies, _SiteFiles, EventStream):
    protocol_version = "HTTP/1.0"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, directory=str(_served(self.server_state).site), **kwargs)

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        if log.isEnabledFor(logging.INFO) and not self.server_state.quiet:
            log.info("%s %s", self.address_string(), format % args)

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")  # a reload after a regeneration must show the new figures
        super().end_headers()

    # ---------------------------------------------------------------- routing

    def _api_path(self) -> str | None:
        path = urlsplit(self.path).path
        return path if path == "/api" or path.startswith("/api/") else None

    def _refused(self) -> bool:
        """Answered 403 already: the Host or the Origin is not this server."""
        if not self._host_ok():
            self._json(403, {"error": f"this server answers only for 127.0.0.1:{self.server_state.port} and "
                                      f"localhost:{self.server_state.port}"})
            return True
        if not self._origin_ok():
            self._json(403, {"error": f"requests from {self.headers.get('Origin')} are refused; use the page served at "
                                      f"http://127.0.0.1:{self.server_state.port}/"})
            return True
        return False

    def do_GET(self) -> None:  # noqa: N802
        if self._refused():
            return None
        path = self._api_path()
        if path is None:
            return self._static(head=False)
        if path == "/api/status":
            return self._json(200, self.server_state.status())
        if path == "/api/events":
            return self._events()
        if path == "/api/regenerate":
            return self._json(405, {"error": "use POST"}, {"Allow": "POST"})
        return self._json(404, {"error": f"no such API endpoint: {path}"})

    def do_HEAD(self) -> None:  # noqa: N802
        if self._refused():
            return None
        if self._api_path() is None:
            return self._static(head=True)
        return self._json(405, {"error": "use GET or POST"})

    def do_POST(self) -> None:  # noqa: N802
        if self._refused():
            return None
        path = self._api_path()
        if path != "/api/regenerate":
            known = path in ("/api/status", "/api/events")
            return self._json(405 if known else 404, {"error": "use GET" if known else "no such endpoint: "
                                                                                       f"{urlsplit(self.path).path}"})
        state = self.server_state
        length = self.headers.get("Content-Length")
        if length is None:
            return self._json(411, {"error": "Content-Length is required"})
        try:
            size = int(length)
        except ValueError:
            return self._json(400, {"error": "Content-Length is not a number"})
        if size > MAX_UPLOAD:
            return self._refuse_unread(size, 413, {"error": f"the request is {readable_size(size)}, more than the "
                                                            f"{readable_size(MAX_UPLOAD)} limit; use a smaller image"})
        if size < 0:
            return self._json(400, {"error": "Content-Length is negative"})
        # Refused, not queued, and before the body is read: requests arriving during a regeneration
        # never hold their uploads in memory.
        if state.busy.locked():
            return self._refuse_unread(size, 409, {"error": BUSY})
        if not state.bodies.acquire(blocking=False):
            return self._refuse_unread(size, 503, {"error": f"{MAX_BODIES} requests are already sending their bodies; "
                                                            "try again"})
        incomplete: IncompleteBody | None = None
        try:
            body = self._read_body(size)  # within BODY_TIMEOUT, without the lock: a slow client holds up no one
        except IncompleteBody as exc:
            body, incomplete = b"", exc
        finally:
            state.bodies.release()
        if incomplete is not None:
            return self._refuse_unread(incomplete.missing, 400, {"error": incomplete.message})
        return self._regenerate(body)

    def _regenerate(self, body: bytes) -> None:
        state = self.server_state
        if not state.busy.acquire(blocking=False):  # another regeneration started while this body arrived
            return self._json(409, {"error": BUSY})
        try:
            fields, files = parse_body(self.headers.get("Content-Type", ""), body, state.forms)
            status, answer = 200, state.jobs.submit(lambda: state._regenerate(fields, files),
                                                    stopping=state.events.closed)
        except ApiError as exc:
            status, answer = exc.status, {"error": exc.message}
        except Exception as exc:  # noqa: BLE001 - a bug: one line for the page, the traceback in the log
            log.exception("regeneration failed")
            status, answer = 500, {"error": f"internal error: {type(exc).__name__}: {exc}"}
        finally:
            state.busy.release()  # before answering: a request sent on receipt of this answer is not refused
        return self._json(status, answer)

    def _host_ok(self) -> bool:
        """Host names this server, as every browser sends it: a page whose DNS name was rebound to
        127.0.0.1 sends its own name and gets nothing, static files included."""
        host = self.headers.get("Host", "")
        return f"http://{host.lower()}" in self.server_state.origins()

    def _origin_ok(self) -> bool:
        """Origin, when a browser sends one, is this server: a page of another site gets nothing, pages included."""
        origin = self.headers.get("Origin")
        return origin is None or origin.lower() in self.server_state.origins()


def _served(state: WarmServer) -> WarmSite:
    """The site ``state`` serves: the HTTP side starts only after WarmServer.prepare() built it."""
    if state.site is None:
        raise RuntimeError("WarmServer.prepare() has not built the site yet")
    return state.site


def _inject(html: bytes) -> bytes:
    marker = html.find(b"</head>")
    if marker < 0:
        return html
    return html[:marker] + LIVE_RELOAD.encode() + html[marker:]
