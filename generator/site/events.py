"""Server-sent events of `python -m transformer_trace serve`: "progress" while a regeneration runs, "reload" when the
served site changed. ``Events`` fans them out to every open page (at most MAX_EVENT_STREAMS), ``EventStream`` is
the request handler's /api/events answer, ``EventProgress`` turns the generator's progress into events."""

from __future__ import annotations

import http.server
import json
import queue
import select
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from transformer_trace.progress import Progress

if TYPE_CHECKING:
    from transformer_trace.site.server import WarmServer

MAX_EVENT_STREAMS = 32  # open /api/events connections, each holding a thread: a few tabs need a handful
KEEP_ALIVE_S = 15  # a comment line after this long without an event, so proxies and browsers keep the stream


class Events:
    """Fan-out of server-sent events to every connected page, at most ``limit`` at a time."""

    def __init__(self, limit: int = MAX_EVENT_STREAMS) -> None:
        self._subscribers: set[queue.SimpleQueue] = set()
        self._lock = threading.Lock()
        self.limit = limit
        self.closed = threading.Event()

    def subscribe(self) -> queue.SimpleQueue | None:
        """A queue of the events to come, or None when ``limit`` pages are already subscribed."""
        q: queue.SimpleQueue = queue.SimpleQueue()
        with self._lock:
            if len(self._subscribers) >= self.limit:
                return None
            self._subscribers.add(q)
        return q

    def unsubscribe(self, q: queue.SimpleQueue) -> None:
        with self._lock:
            self._subscribers.discard(q)

    def publish(self, event: str, data: dict[str, Any]) -> None:
        message = f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()
        with self._lock:
            for q in self._subscribers:
                q.put(message)

    def close(self) -> None:
        self.closed.set()
        with self._lock:
            for q in self._subscribers:
                q.put(None)


class ServerRequestHandler(http.server.SimpleHTTPRequestHandler):
    """What every part of the warm server's request handler builds on: the server it answers for and JSON answers."""

    server_state: WarmServer  # set by http_handler.listen() on a subclass made per server

    def _json(self, status: int, data: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        body = json.dumps(data).encode("ascii")  # \u escapes: any text, lone surrogates included, is valid JSON
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class EventStream(ServerRequestHandler):
    """The /api/events answer: a stream of the server's Events (``server_state.events``)."""

    def _events(self) -> None:
        state = self.server_state
        q = state.events.subscribe()
        if q is None:  # each stream holds a thread: a page opened in too many tabs must not exhaust them
            return self._json(503, {"error": f"more than {state.events.limit} pages are following this server; close "
                                             "some"},
                              {"Retry-After": "10"})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.end_headers()
        try:
            self.wfile.write(b"retry: 2000\n\n")
            self.wfile.flush()
            quiet_since = time.monotonic()
            while not state.events.closed.is_set():
                try:
                    message = q.get(timeout=1)
                except queue.Empty:
                    if self._client_gone():  # free its place under the cap now, not at the next failed write
                        break
                    if time.monotonic() - quiet_since < KEEP_ALIVE_S:
                        continue
                    message = b": keep-alive\n\n"
                if message is None:
                    break
                self.wfile.write(message)
                self.wfile.flush()
                quiet_since = time.monotonic()
        except OSError:  # the page went away
            pass
        finally:
            state.events.unsubscribe(q)
            self.close_connection = True

    def _client_gone(self) -> bool:
        """Whether the page closed its event stream: it sends nothing after its request, so a readable
        socket means end of stream (or a reset)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True


class EventProgress(Progress):
    """A generator Progress whose steps and bars become "progress" events.

    The build asks it to iterate over the figures once their worker processes are drawing; this
    process then has nothing to do but wait, so ``while_drawing`` runs first (pages are rendered ahead).
    """

    def __init__(self, publish: Callable[[str, dict], None], while_drawing: Callable[[], None] = lambda: None) -> None:
        super().__init__(enabled=False)
        self._publish = publish
        self._while_drawing = while_drawing

    def iterate(self, items, label, total=None):
        self._while_drawing()
        return super().iterate(items, label, total)

    def status(self, text: str) -> None:
        self._publish("progress", {"step": text})

    def _bar(self, label: str, done: int, total: int) -> None:
        self._publish("progress", {"step": label, "done": done, "total": total})
