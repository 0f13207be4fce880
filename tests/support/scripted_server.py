"""A scripted OpenAI-compatible HTTP server on loopback, for tests and benchmarks.

Real HTTP, so the code under test goes through the real ``openai`` SDK: its retries, timeouts,
SSE parsing and error classes. ``POST /v1/chat/completions`` answers from a queue of scripted
replies, streaming (SSE, chunked) or not, with tool calls (single or parallel) and usage;
faults are replies too (500, 429, slow, cut-off stream, malformed JSON, context overflow).
Every received JSON body is logged in ``requests``, so a test can assert exactly what went
on the wire. When the queue is empty the ``default`` reply answers (zero latency for load
benchmarks); set ``default = None`` to make an unscripted call fail loudly.

In a test::

    def test_x(scripted_server):
        scripted_server.enqueue(rate_limited(), text("hello", usage=(12, 3)))
        llm = OpenAIChatLLM(model="m", base_url=scripted_server.base_url, api_key="k")

Standalone (benchmarks, a daphne subprocess pointed at it through ``LLM_BASE_URL``)::

    python -m tests.support.scripted_server --port 8765 [--delay S] [--chunk-delay S] [--text T]

Replies that the SDK retries (5xx, 429) carry ``retry-after-ms: 1`` so retry tests stay fast.

Streams look like real providers' (``Reply`` fields, tests/support/scripted_replies.py):
``first_chunk_delay`` (headers at once, then the prompt-processing pause before the first
delta) and ``chunk_delay`` between deltas; tool calls with their arguments in 7-character
fragments or whole in one chunk (``tool_chunks="whole"``), with or without ``index``
(``tool_index=False``); usage in the last chunk only (when asked with ``stream_options``) or
not at all (``usage=None``). A server can refuse ``stream_options`` with a 400 naming it
(``reject_stream_options = True``, as several OpenAI-compatible servers do).
``hold=threading.Event()`` stops a stream after ``hold_after`` content deltas until the test
sets the event, so a test can prove something happened while the provider was still streaming;
``gate=threading.Event()`` (``gated()``) holds any reply before it starts until the test sets
the event. ``on_first_content(body, t)`` is called with ``time.perf_counter()`` right after a
stream's first content delta is written.

``profile`` (``ScriptedServer(profile=…)``, ``server.use_profile(…)`` or ``--profile``)
switches the wire behaviour to one provider's: what it refuses, where its reasoning text
(``Reply.reasoning``) and usage arrive, how it streams tool calls, what ``/v1/models`` and
its native APIs report (``tests/support/provider_profiles.py``). The default, ``openai``, is
OpenAI's chat API. ``profile_base_url(name)`` is one profile's endpoint of its own on the
same server (``/p/<name>/v1``): a client that keeps what it learnt per endpoint (a model
configuration row) starts empty on each, and one queue answers them all.
"""

from __future__ import annotations

import argparse
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.support.provider_profiles import PROFILES, WireProfile
from tests.support.scripted_replies import (
    DEFAULT_TEXT,
    OVERFLOW_MESSAGE,
    Reply,
    as_reply,
    context_overflow,
    cut_off,
    ends_early,
    gated,
    held,
    http_error,
    malformed,
    no_choices,
    rate_limited,
    rate_limited_as_openai,
    server_error,
    slow,
    stream_error,
    text,
    tool_call,
    tool_calls,
)

# The replies are made here for the tests that import them from the server.
__all__ = [
    "DEFAULT_TEXT",
    "OVERFLOW_MESSAGE",
    "Reply",
    "context_overflow",
    "cut_off",
    "ends_early",
    "gated",
    "held",
    "http_error",
    "malformed",
    "no_choices",
    "rate_limited",
    "rate_limited_as_openai",
    "server_error",
    "slow",
    "stream_error",
    "text",
    "tool_call",
    "tool_calls",
    "ScriptedServer",
    "free_port",
    "scripted_server",
    "scripted_server_session",
]


# --- the server -----------------------------------------------------------------------------


class ScriptedServer:
    """A threaded HTTP server on 127.0.0.1; a context manager, or ``start()``/``stop()``."""

    def __init__(
        self,
        *,
        port: int = 0,
        default: Reply | str | None = DEFAULT_TEXT,
        model: str = "scripted",
        profile: str = "openai",
    ) -> None:
        self.default: Reply | str | None = default
        self.model = model
        self.profile: WireProfile = PROFILES[profile]
        self.queue: list[Reply] = []
        self.requests: list[dict[str, Any]] = []  # JSON bodies, in arrival order
        self.request_paths: list[str] = []  # their paths, profile prefix included
        self.request_headers: list[dict[str, str]] = []
        # Like several OpenAI-compatible servers: a 400 naming ``stream_options``.
        self.reject_stream_options = False
        # Called as on_first_content(body, time.perf_counter()) after a first content delta.
        self.on_first_content: Any = None
        self._lock = threading.Lock()
        self._abort = threading.Event()  # wakes slow replies on reset()/stop()
        self._httpd = _HTTPServer(("127.0.0.1", port), _Handler)
        self._httpd.scripted = self
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def profile_base_url(self, name: str) -> str:
        """An endpoint of its own that speaks ``name``'s wire format, whatever ``profile``."""
        if name not in PROFILES:
            raise ValueError(f"unknown wire profile {name!r}")
        return f"http://127.0.0.1:{self.port}/p/{name}/v1"

    def daphne_env(self, model: str = "scripted-main", **extra: str) -> dict[str, str]:
        """Settings for a live daphne whose main model is this server (no retries, so a
        scripted fault is seen once); ``extra`` adds or overrides settings."""
        return {
            "LLM_BASE_URL": self.base_url,
            "LLM_API_KEY": "sk-scripted",
            "LLM_MODEL": model,
            "LLM_MAX_RETRIES": "0",
            "LLM_RATE_LIMIT_RETRIES": "0",
            "LLM_DISCOVER_CONTEXT": "false",  # the default budget, unless a test asks
            **extra,
        }

    def enqueue(self, *replies: Reply | str) -> ScriptedServer:
        with self._lock:
            self.queue.extend(as_reply(r) for r in replies)
        return self

    def describe(self) -> str:
        """What it was asked and what is left to answer, for a failed test's report."""
        with self._lock:
            asked = [_request_line(body) for body in self.requests]
            left = len(self.queue)
        return "\n".join([f"{len(asked)} request(s), {left} scripted reply(ies) left", *asked])

    def use_profile(self, name: str) -> ScriptedServer:
        self.profile = PROFILES[name]
        return self

    def reset(self) -> None:
        """Empty the queue and the request log; abort replies still sleeping; back to the
        ``openai`` profile."""
        with self._lock:
            self.profile = PROFILES["openai"]
            self.queue.clear()
            self.requests.clear()
            self.request_paths.clear()
            self.request_headers.clear()
            self.reject_stream_options = False
            self.on_first_content = None
            self._abort.set()
            self._abort = threading.Event()

    def start(self) -> ScriptedServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"scripted-llm:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._abort.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # Called from handler threads.
    def _take(
        self, body: dict[str, Any], headers: dict[str, str], path: str, profile: WireProfile
    ) -> tuple[Reply | None, Any]:
        with self._lock:
            self.requests.append(body)
            self.request_paths.append(path)
            self.request_headers.append(headers)
            refusal = profile.refusal(body)
            if refusal is not None:  # refused before any reply is used up, as a provider does
                return Reply(content=None, status=400, error=refusal), self._abort
            reply = self.queue.pop(0) if self.queue else None
            if reply is None and self.default is not None:
                reply = as_reply(self.default)
            if reply is not None and profile.whole_tool_calls:
                reply.tool_chunks, reply.tool_index = "whole", False
            return reply, self._abort


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a slow reply must not hold up stop()
    allow_reuse_address = True
    request_queue_size = 1024  # load benchmarks open hundreds of connections at once
    scripted: ScriptedServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real providers; the SDK pools connections
    # Headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm and
    # the client's delayed ACK add ~40 ms to every keep-alive reply.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # quiet: tests and benchmarks read the request log instead

    def _route(self) -> tuple[WireProfile | None, str]:
        """The wire profile and the path below its prefix: ``/p/<name>/…`` speaks ``name``'s
        (None if there is no such profile), any other path the server's ``profile``."""
        path = self.path.rstrip("/")
        if not path.startswith("/p/"):
            return self.server.scripted.profile, path
        name, _, rest = path[len("/p/") :].partition("/")
        return PROFILES.get(name), "/" + rest

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        scripted = self.server.scripted
        profile, path = self._route()
        found = None
        if profile is not None:
            found = profile.models(scripted.model) if path == "/v1/models" else None
            found = found or profile.get(path, scripted.model)
        if found is not None:
            self._send_json(200, found)
        else:
            self._send_json(404, {"error": {"message": "not found", "code": "not_found"}})

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        profile, path = self._route()
        if profile is None or path != "/v1/chat/completions":
            native = profile.post(path, _json_or_empty(raw)) if profile is not None else None
            if native is not None:
                self._send_json(200, native)
            else:
                self._send_json(404, {"error": {"message": "not found", "code": "not_found"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send_json(400, {"error": {"message": "request body is not JSON"}})
            return
        reply, abort = self.server.scripted._take(
            body, {k.lower(): v for k, v in self.headers.items()}, self.path, profile
        )
        if reply is None:
            self._send_json(
                500,
                {"error": {"message": "scripted server: no reply queued and no default"}},
                {"x-should-retry": "false"},
            )
            return
        if reply.delay and abort.wait(reply.delay):
            self.close_connection = True  # reset()/stop() while sleeping: just hang up
            return
        if reply.taken is not None:
            reply.taken.set()
        while reply.gate is not None and not reply.gate.wait(0.05):
            if abort.is_set():
                self.close_connection = True
                return
        if body.get("stream_options") is not None and self.server.scripted.reject_stream_options:
            # vLLM-style wording; the reply stays queued for the request without the field.
            with self.server.scripted._lock:
                self.server.scripted.queue.insert(0, reply)
            message = "Unrecognized request argument supplied: stream_options"
            error = {"message": message, "type": "invalid_request_error"}
            self._send_json(400, {"error": error | {"param": "stream_options", "code": None}})
            return
        try:
            if reply.status != 200:
                self._send_json(reply.status, {"error": reply.error or {}}, reply.headers)
            elif body.get("stream"):
                self._stream(body, reply, abort, profile)
            else:
                self._complete(body, reply, profile)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (timeout): nothing to do

    # --- non-streaming ----------------------------------------------------------------------

    def _complete(self, body: dict[str, Any], reply: Reply, profile: WireProfile) -> None:
        if reply.fault == "malformed":
            self._send_raw(200, b'{"id": "chatcmpl-broken", "choices": [', "application/json")
            return
        if reply.fault == "cut_off":
            # Promise a body, send half of it, hang up.
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", "4096")
            self.end_headers()
            self.wfile.write(b'{"id": "chatcmpl-cut", "choices": [{"ind')
            self.wfile.flush()
            self.close_connection = True
            return
        content = profile.content(reply.content, reply.reasoning)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if reply.reasoning and profile.reasoning_field:
            message[profile.reasoning_field] = reply.reasoning
        if reply.tool_calls:
            message["tool_calls"] = [_wire_call(c) for c in reply.tool_calls]
        choices = (
            []
            if reply.fault == "no_choices"
            else [{"index": 0, "message": message, "finish_reason": reply.resolved_finish_reason()}]
        )
        out = _envelope("chat.completion", body, self.server.scripted.model, choices)
        usage = _usage(body, reply, profile)
        if usage is not None:
            out["usage"] = usage
        self._send_json(200, out, reply.headers)

    # --- streaming --------------------------------------------------------------------------

    def _stream(
        self, body: dict[str, Any], reply: Reply, abort: threading.Event, profile: WireProfile
    ) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        for k, v in reply.headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.flush()
        scripted = self.server.scripted
        model = scripted.model
        first = True
        content_sent = 0

        def event(choices: list[dict[str, Any]], **extra: Any) -> None:
            nonlocal first
            wait = reply.first_chunk_delay if first else reply.chunk_delay
            first = False
            if wait and abort.wait(wait):
                raise _Aborted
            payload = _envelope("chat.completion.chunk", body, model, choices) | extra
            self._chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")

        def content(piece: str) -> None:
            nonlocal content_sent
            if reply.hold is not None and content_sent == reply.hold_after:
                while not reply.hold.wait(0.05):
                    if abort.is_set():
                        raise _Aborted
            event([{"index": 0, "delta": {"content": piece}}])
            content_sent += 1
            if content_sent == 1 and scripted.on_first_content is not None:
                scripted.on_first_content(body, time.perf_counter())

        try:
            if reply.fault == "no_choices":
                event([], usage=_usage(body, reply, profile))
                self._chunk(b"data: [DONE]\n\n")
                self._chunk(b"")
                return
            event([{"index": 0, "delta": {"role": "assistant", "content": ""}}])
            if reply.reasoning and profile.reasoning_field:
                # Reasoning models think first, in their own delta field, then answer.
                for piece in _pieces(reply.reasoning):
                    field_name = profile.reasoning_field
                    event([{"index": 0, "delta": {field_name: piece, "content": None}}])
            if reply.fault == "malformed":
                self._chunk(b'data: {"choices": [{"delta": {"content": "bro\n\n')
            written = profile.content(reply.content, reply.reasoning) or ""
            pieces = _pieces(written) if written == (reply.content or "") else _small(written)
            for piece in pieces:
                content(piece)
            if reply.fault == "cut_off":
                self.wfile.flush()
                self.close_connection = True  # no terminating chunk: the body is incomplete
                return
            if reply.fault == "stream_error":
                # vLLM and others report a failure inside an already-started stream.
                error = {"error": reply.error or {"message": "stream failed"}}
                self._chunk(b"data: " + json.dumps(error).encode() + b"\n\n")
                self._chunk(b"")
                return
            if reply.fault == "ends_early":
                self._chunk(b"")  # a clean end of body, but no finish_reason and no [DONE]
                return
            for index, call in enumerate(reply.tool_calls):
                for delta in _tool_deltas(index, call, reply):
                    event([{"index": 0, "delta": {"tool_calls": [delta]}}])
            event([{"index": 0, "delta": {}, "finish_reason": reply.resolved_finish_reason()}])
            usage = _usage(body, reply, profile)
            if usage is not None and profile.sends_stream_usage(body):
                event([], usage=usage)
            self._chunk(b"data: [DONE]\n\n")
            self._chunk(b"")  # the terminating zero-length chunk
        except _Aborted:
            self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    # --- plumbing ---------------------------------------------------------------------------

    def _send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(obj).encode(), "application/json", headers)

    def _send_raw(
        self, status: int, data: bytes, ctype: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


class _Aborted(Exception):
    pass


def _wire_call(call: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call["id"],
        "type": "function",
        "function": {"name": call["name"], "arguments": call["arguments"]},
    }


def _tool_deltas(index: int, call: dict[str, Any], reply: Reply) -> list[dict[str, Any]]:
    """The streamed pieces of one tool call: a head with id and name, then the arguments
    in fragments (or everything in one piece); ``index`` left out if the reply says so."""
    args = call["arguments"]
    head = {"id": call["id"], "type": "function", "function": {"name": call["name"]}}
    if reply.tool_chunks == "whole":
        head["function"]["arguments"] = args
        deltas = [head]
    else:
        head["function"]["arguments"] = ""
        # Fragments carry no id, as OpenAI sends them.
        deltas = [head] + [
            {"function": {"arguments": args[start : start + 7]}} for start in range(0, len(args), 7)
        ]
    if reply.tool_index:
        for delta in deltas:
            delta["index"] = index
    return deltas


def _envelope(obj: str, body: dict[str, Any], model: str, choices: list) -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted",
        "object": obj,
        "created": int(time.time()),
        "model": body.get("model") or model,
        "choices": choices,
    }


def _json_or_empty(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _usage(body: dict[str, Any], reply: Reply, profile: WireProfile) -> dict[str, Any] | None:
    if reply.usage is None:
        return None
    if reply.usage == "auto":
        # A rough, deterministic count: the request's JSON and the reply's text, ~4 chars/token.
        prompt = len(json.dumps(body.get("messages", []))) // 4 + 1
        completion = len(reply.content or "") // 4 + 1
        completion += sum(len(c["arguments"]) // 4 + 1 for c in reply.tool_calls)
    else:
        prompt, completion = reply.usage
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    return profile.usage(usage, reply.reasoning)


def _small(content: str, size: int = 5) -> list[str]:
    """Content in pieces of ``size`` characters (inline think tags arrive split)."""
    return [content[i : i + size] for i in range(0, len(content), size)]


def _pieces(content: str) -> list[str]:
    """Word-sized content deltas, whitespace kept, so joined they give back ``content``."""
    pieces: list[str] = []
    word = ""
    for ch in content:
        word += ch
        if ch == " ":
            pieces.append(word)
            word = ""
    if word:
        pieces.append(word)
    return pieces


# --- pytest fixtures (imported by tests/conftest.py) ---------------------------------------


def _request_line(body: dict[str, Any]) -> str:
    messages = body.get("messages") or [{}]
    last = messages[-1]
    said = str(last.get("content") or last.get("tool_calls") or "")[:100]
    tools = len(body.get("tools") or [])
    role = last.get("role")
    return f"- {body.get('model')}: {len(messages)} messages, {tools} tools; last {role}: {said!r}"


@pytest.fixture(scope="session")
def scripted_server_session():
    with ScriptedServer() as server:
        yield server


@pytest.fixture
def scripted_server(scripted_server_session):
    """The scripted server with an empty queue and request log, default reply restored."""
    server = scripted_server_session
    server.reset()
    server.default = DEFAULT_TEXT
    yield server
    server.reset()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--text", default=DEFAULT_TEXT, help="the reply to every request")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--chunk-delay", type=float, default=0.0, help="seconds between chunks")
    parser.add_argument(
        "--first-chunk-delay", type=float, default=0.0, help="seconds before a stream's first delta"
    )
    parser.add_argument("--profile", default="openai", choices=sorted(PROFILES))
    args = parser.parse_args(argv)
    default = Reply(
        content=args.text,
        delay=args.delay,
        first_chunk_delay=args.first_chunk_delay,
        chunk_delay=args.chunk_delay,
    )
    server = ScriptedServer(port=args.port, default=default, profile=args.profile).start()
    print(f"scripted OpenAI-compatible server on {server.base_url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
