"""Between fimone and a stdio tool server: ``python mcp_relay.py MAX_LINE_BYTES KEEP_CHARS
MAX_TOOLS ALLOWED -- COMMAND ARGS…`` starts the server and passes its messages on, cutting a
tool result too large to read, and a tool listing longer than is offered, before the server
process parses them (docs/tools.md, "MCP servers").

The SDK reads each message of a stdio server whole and parses it on the server's event
loop, one C call that holds the interpreter: a tool answering with a 50 MB JSON text
stalled every user for seconds, and then the result was cut to ``MAX_RESULT_CHARS``
anyway. Here, in a process of its own, a message longer than ``MAX_LINE_BYTES`` that is
a tool result is parsed and cut: its text blocks to ``KEEP_CHARS`` characters in all,
with a sentence saying how much there was; structured content that is such a text
wrapped (``{"result": text}``, as SDK servers send a text) is cut the same way, other
structured content is dropped (and the result marked an error saying why, since a
server's output schema would refuse it missing).

A tool listing is parsed on that loop too, and a server may list 10,000 tools (3.5 MB,
a second's pause) of which only ``MAX_TOOLS`` are offered. So a listing page keeps only
the tools ``ALLOWED`` names (a JSON list; ``null``: all), and at most ``MAX_TOOLS + 1`` of
them: one more than are offered, so that the client still sees the server listed more
than it offers (and says so), with no ``nextCursor``, since no further page is needed.
Every other message passes unchanged, byte for byte, both ways.

Run as a script by its path (the server's working directory is the server's): the
standard library only. The server is a child in the relay's process group, so the SDK's
stop (stdin closed, then the group terminated) ends both; stdin closed makes the relay
close the server's, and the relay exits with the server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from typing import IO, Any, TypeGuard


def cut_result(line: bytes, keep_chars: int) -> bytes:
    """``line`` (a JSON-RPC message) with its tool result cut, or as it is when it is
    not a tool result."""
    try:
        message = json.loads(line)
    except ValueError:
        return line
    result = message.get("result") if isinstance(message, dict) else None
    if not isinstance(result, dict) or not isinstance(result.get("content"), list):
        return line
    blocks = [b for b in result["content"] if isinstance(b, dict) and b.get("type") == "text"]
    texts = [b["text"] for b in blocks if isinstance(b.get("text"), str)]
    total = sum(len(text) for text in texts)
    kept: list[dict] = []
    room = keep_chars
    for text in texts:
        if room <= 0:
            break
        kept.append({"type": "text", "text": text[:room]})
        room -= len(text)
    note = (
        f"[The tool's answer was {len(line):,} bytes ({total:,} characters of text); "
        f"the first {min(total, keep_chars):,} characters are kept, the rest was not read. "
        "Ask the tool for a smaller part if it can give one.]"
    )
    cut: dict = {"content": [*kept, {"type": "text", "text": note}]}
    cut["isError"] = bool(result.get("isError"))
    structured = result.get("structuredContent")
    if _wrapped_text(structured):
        # A text result as SDK servers wrap it: the same text, cut the same way.
        cut["structuredContent"] = {"result": structured["result"][:keep_chars]}
    elif "structuredContent" in result:
        # Dropped; an output schema would refuse the result without it, so it is an error
        # that says why.
        cut["isError"] = True
        cut["content"].insert(0, {"type": "text", "text": "Its structured content was too large."})
    return json.dumps({**message, "result": cut}).encode() + b"\n"


def cap_listing(line: bytes, max_tools: int, allowed: frozenset[str] | None) -> bytes:
    """``line`` (a JSON-RPC message) as it is, or, when it is a tool listing with tools
    ``allowed`` leaves out or more than ``max_tools``, with only the allowed ones, at most
    ``max_tools + 1``, and no next page once there are more than ``max_tools``."""
    try:
        message = json.loads(line)
    except ValueError:
        return line
    result = message.get("result") if isinstance(message, dict) else None
    if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
        return line
    tools = result["tools"]
    kept = [
        tool
        for tool in tools
        if allowed is None or (isinstance(tool, dict) and tool.get("name") in allowed)
    ]
    if len(kept) == len(tools) and len(kept) <= max_tools:
        return line
    capped = {**result, "tools": kept[: max_tools + 1]}
    if len(kept) > max_tools:
        capped.pop("nextCursor", None)
    return json.dumps({**message, "result": capped}).encode() + b"\n"


def _wrapped_text(structured: object) -> TypeGuard[dict[str, Any]]:
    return (
        isinstance(structured, dict)
        and set(structured) == {"result"}
        and isinstance(structured["result"], str)
    )


def _pass_stdin(server_stdin: IO[bytes]) -> None:
    try:
        while chunk := os.read(0, 1 << 16):
            server_stdin.write(chunk)
            server_stdin.flush()
    except OSError:
        pass
    finally:
        try:
            server_stdin.close()
        except OSError:
            pass


def main(argv: list[str]) -> int:
    if len(argv) < 6 or argv[4] != "--":
        print(
            "usage: mcp_relay.py MAX_LINE_BYTES KEEP_CHARS MAX_TOOLS ALLOWED -- COMMAND ARGS…",
            file=sys.stderr,
        )
        return 2
    max_line, keep_chars, max_tools, allowed_names, _, *command = argv
    names = json.loads(allowed_names)
    allowed = frozenset(names) if names is not None else None
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None  # both are pipes
    threading.Thread(target=_pass_stdin, args=(server.stdin,), daemon=True).start()
    out = sys.stdout.buffer
    try:
        for line in server.stdout:  # one message a line; read in linear time
            if b'"tools"' in line:  # perhaps a listing; a check in linear time
                line = cap_listing(line, int(max_tools), allowed)
            if len(line) > int(max_line):
                line = cut_result(line, int(keep_chars))
            out.write(line)
            out.flush()
    except (BrokenPipeError, OSError):
        server.terminate()
    return server.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
