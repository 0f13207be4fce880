"""The scripted model server's replies (tests/support/scripted_server.py): a ``Reply`` says
what one request gets, in content, tool calls, usage, timing and faults; the functions
below make the common ones. A plain string queued is ``text(string)``."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

DEFAULT_TEXT = "This is the scripted server's default reply."
OVERFLOW_MESSAGE = (
    "This model's maximum context length is 8192 tokens. However, your messages resulted in "
    "9001 tokens. Please reduce the length of the messages."
)


@dataclass
class Reply:
    """One scripted answer (or fault) to one ``/v1/chat/completions`` request.

    ``usage``: ``(prompt_tokens, completion_tokens)``, ``"auto"`` (a rough count of the
    request and reply), or ``None`` to send no usage at all (tests the client's estimate).
    ``fault``: ``None``, ``"cut_off"`` (the connection drops mid-body), ``"ends_early"`` (a
    stream ends cleanly without finishing), ``"stream_error"`` (an error event mid-stream),
    ``"malformed"`` (the body or an SSE event is not JSON) or ``"no_choices"`` (an empty
    ``choices`` list).
    """

    content: str | None = DEFAULT_TEXT
    reasoning: str | None = None  # sent only by profiles that stream reasoning text
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: tuple[int, int] | str | None = "auto"
    finish_reason: str | None = None
    delay: float = 0.0  # seconds before the response starts ("slow")
    first_chunk_delay: float = 0.0  # streaming: seconds between the headers and the first delta
    chunk_delay: float = 0.0  # seconds between streamed chunks
    tool_chunks: str = "split"  # "split": arguments in fragments; "whole": one chunk per call
    tool_index: bool = True  # False: tool-call deltas carry no "index" (some providers)
    hold: threading.Event | None = None  # streaming: wait for it after hold_after deltas
    hold_after: int = 1
    gate: threading.Event | None = None  # wait for it before the response starts (any kind)
    taken: threading.Event | None = None  # set when a request gets this reply
    status: int = 200
    error: dict[str, Any] | None = None  # the error body of a non-200 reply
    headers: dict[str, str] = field(default_factory=dict)
    fault: str | None = None

    def resolved_finish_reason(self) -> str:
        return self.finish_reason or ("tool_calls" if self.tool_calls else "stop")


# --- reply builders -------------------------------------------------------------------------


def text(content: str, *, usage: tuple[int, int] | str | None = "auto", **kw: Any) -> Reply:
    return Reply(content=content, usage=usage, **kw)


def tool_call(name: str, arguments: dict[str, Any] | str, call_id: str | None = None) -> dict:
    """One tool call for :func:`tool_calls`; ``arguments`` as a dict or raw JSON text."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "name": name, "arguments": args}


def tool_calls(
    *calls: dict[str, Any] | tuple[str, dict[str, Any] | str],
    content: str | None = None,
    usage: tuple[int, int] | str | None = "auto",
    **kw: Any,
) -> Reply:
    """A reply calling one tool, or several in parallel: ``tool_calls(("calculator", {...}))``."""
    built = []
    for i, call in enumerate(calls):
        spec = tool_call(*call) if isinstance(call, tuple) else dict(call)
        spec["id"] = spec.get("id") or f"call_{i}_{spec['name']}"
        built.append(spec)
    return Reply(content=content, tool_calls=built, usage=usage, **kw)


def http_error(
    status: int, message: str = "Scripted failure.", *, code: str | None = None, **kw: Any
) -> Reply:
    headers = {"retry-after-ms": "1"} if status == 429 or status >= 500 else {}
    headers.update(kw.pop("headers", {}))
    body = {"message": message, "type": "scripted_error", "param": None, "code": code}
    return Reply(content=None, status=status, error=body, headers=headers, **kw)


def server_error(status: int = 500) -> Reply:
    return http_error(status, "The scripted server had an internal error.", code="server_error")


def rate_limited() -> Reply:
    return http_error(429, "Rate limit reached (scripted).", code="rate_limit_exceeded")


def rate_limited_as_openai(headers: dict[str, str]) -> Reply:
    """OpenAI's 429 for a tokens-per-minute limit (the body as its API sends it), with the
    given rate-limit headers instead of the fast ``retry-after-ms`` test default."""
    message = (
        "Rate limit reached for gpt-4o in organization org-scripted on tokens per min (TPM): "
        "Limit 30000, Used 29800, Requested 1200. Please try again in 2.4s. Visit "
        "https://platform.openai.com/account/rate-limits to learn more."
    )
    body = {"message": message, "type": "tokens", "param": None, "code": "rate_limit_exceeded"}
    return Reply(content=None, status=429, error=body, headers=dict(headers))


def context_overflow(status: int = 400, message: str = OVERFLOW_MESSAGE) -> Reply:
    return http_error(status, message, code="context_length_exceeded")


def slow(seconds: float, reply: Reply | str | None = None) -> Reply:
    """``reply`` (default: the default text), sent only after ``seconds``."""
    base = as_reply(reply if reply is not None else DEFAULT_TEXT)
    base.delay = seconds
    return base


def cut_off(partial: str = "The answer is") -> Reply:
    """Streaming: some text, then the connection drops (no finish, no [DONE])."""
    return Reply(content=partial, fault="cut_off")


def ends_early(partial: str = "The answer is") -> Reply:
    """Streaming: some text, then a clean end of the body without a finish_reason."""
    return Reply(content=partial, fault="ends_early")


def stream_error(message: str = "The scripted stream failed.", partial: str = "Par") -> Reply:
    """Streaming: some text, then an ``{"error": …}`` event inside the stream."""
    error = {"message": message, "type": "scripted_error", "code": None}
    return Reply(content=partial, error=error, fault="stream_error")


def held(reply: Reply | str, release: threading.Event, *, after: int = 1) -> Reply:
    """``reply`` streamed up to ``after`` content deltas, the rest once ``release`` is set."""
    base = as_reply(reply)
    base.hold, base.hold_after = release, after
    return base


def gated(
    reply: Reply | str, gate: threading.Event, *, taken: threading.Event | None = None
) -> Reply:
    """``reply`` (streamed or not) only once ``gate`` is set: the model is still thinking
    for as long as the test needs, however slow the machine, and answers when told.
    ``taken`` is set when a request has got this reply (the caller is inside the call)."""
    base = as_reply(reply)
    base.gate, base.taken = gate, taken
    return base


def malformed() -> Reply:
    return Reply(fault="malformed")


def no_choices() -> Reply:
    return Reply(fault="no_choices")


def as_reply(reply: Reply | str) -> Reply:
    if isinstance(reply, Reply):
        return Reply(**{k: getattr(reply, k) for k in reply.__dataclass_fields__})
    if isinstance(reply, str):
        return Reply(content=reply)
    raise TypeError(f"not a scripted reply: {reply!r}")
