"""A tiny HTTP server on loopback that records what it was sent and answers as a test says.

    with recording_server({"/v1/models": json_answer({...})}) as server:
        discover(server.url("/v1"), "m", "sk-key")
    server.seen  # [(method, path, headers)]

An answer is a callable taking the request handler; helpers build the usual ones (JSON, a
redirect, a body dripped out slowly, a large body).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[BaseHTTPRequestHandler], None]


@dataclass
class RecordingServer:
    routes: dict[str, Answer]
    seen: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    port: int = 0

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def headers_for(self, path: str) -> list[dict[str, str]]:
        return [headers for _, seen_path, headers in self.seen if seen_path == path]


def json_answer(payload: Any, status: int = 200) -> Answer:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        body = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return answer


def raw_answer(body: bytes) -> Answer:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return answer


def redirect_answer(location: str, status: int = 302) -> Answer:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        handler.send_header("Location", location)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    return answer


def dripping_answer(seconds: float, every: float = 0.2) -> Answer:
    """A JSON body sent one space at a time for ``seconds``: each read gets a byte in time."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.end_headers()
        stop = time.monotonic() + seconds
        try:
            while time.monotonic() < stop:
                handler.wfile.write(b" ")
                handler.wfile.flush()
                time.sleep(every)
            handler.wfile.write(b"{}")
        except OSError:
            pass  # the client gave up: what the test wants

    return answer


@contextmanager
def recording_server(routes: dict[str, Answer]) -> Iterator[RecordingServer]:
    recording = RecordingServer(routes)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def _serve(self) -> None:
            path = self.path.split("?")[0]
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            headers = {k.lower(): v for k, v in self.headers.items()}
            recording.seen.append((self.command, path, headers))
            answer = recording.routes.get(path)
            if answer is None:
                json_answer({"error": "not found"}, 404)(self)
            else:
                answer(self)

        do_GET = do_POST = _serve  # noqa: N815

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.block_on_close = False  # a dripping answer must not hold up the test's end
    recording.port = server.server_address[1]
    thread = threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": 0.05},  # shutdown() waits up to one interval
        daemon=True,
    )
    thread.start()
    try:
        yield recording
    finally:
        server.shutdown()
        server.server_close()
