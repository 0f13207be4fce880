"""The events of a chat-completions stream as plain dicts, read from the SDK's raw response.

The ``openai`` SDK turns every streamed chunk into pydantic models (``construct_type``),
which cost more CPU per chunk than everything else a streamed reply does on the server
(about 2.4 ms of a 3.7 ms streamed call of 16 chunks, measured with cProfile). The SDK's
documented ``with_streaming_response`` gives the raw response instead; this module reads
its Server-Sent Events the way the SDK does (``data:`` lines, ``[DONE]``, an ``error``
object inside the stream) and yields each chunk's JSON as it is.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import openai


async def sse_data(response: Any) -> AsyncIterator[dict[str, Any]]:
    """Each ``data:`` payload of ``response`` (an SDK ``AsyncAPIResponse``), parsed.

    Ends at ``[DONE]`` (reading the body to its end); raises ``openai.APIError`` for an
    error reported inside the stream and ``ValueError`` for a payload that is not JSON.
    """
    event: str | None = None
    data: list[str] = []
    done = False
    async for line in response.iter_lines():
        if done:
            continue  # read to the end, so the connection goes back to the pool
        if line:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                data.append(value)
            elif field == "event":
                event = value
            continue
        if not data:
            event = None
            continue
        raw, kind = "\n".join(data), event
        data, event = [], None
        if raw.startswith("[DONE]"):
            done = True
            continue
        payload = json.loads(raw)
        if isinstance(payload, dict) and (payload.get("error") or kind == "error"):
            error = payload.get("error") if isinstance(payload.get("error"), dict) else payload
            message = error.get("message") if isinstance(error, dict) else None
            raise openai.APIError(
                message if isinstance(message, str) and message else "stream failed",
                response.http_request,
                body=error,
            )
        if isinstance(payload, dict):
            yield payload
