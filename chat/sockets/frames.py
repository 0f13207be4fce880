"""Every frame the server sends fits the websocket server's limit.

daphne closes a socket (1011) that is sent a frame over ``websocket_max_message_size``
(1 MiB), and a run's events go to every socket of its conversation: one oversized frame
would close them all. JSON escaping makes text grow up to 12 bytes per character (an emoji
is ``\\ud83d\\ude00``), so a legal 100,000-character message can exceed it when echoed.

``encode`` turns one event into one or more JSON texts of at most ``MAX_FRAME_BYTES``:

- ``answer.delta`` is split into several deltas (their texts concatenate to the original);
- ``run.active`` keeps its first piece of the answer so far, the rest follows as deltas;
- any other event loses ``html`` first (the client then reads the message from the API),
  then has its longest text cut with a marker and ``truncated: true``.

The full text always stays in the database and the messages API (docs/protocol.md).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.utils.translation import gettext

logger = logging.getLogger(__name__)

# Half of daphne's 1 MiB: room for anything a proxy adds, and no single huge paint.
MAX_FRAME_BYTES = 512 * 1024
MARKER = "\n\n[… {count:,} more characters not shown here; the full text is in the conversation]"


def encode(event: dict[str, Any], *, max_bytes: int = MAX_FRAME_BYTES) -> list[str]:
    text = _dumps(event)
    if len(text) <= max_bytes:
        return [text]
    kind = event.get("type")
    if kind == "answer.delta" and isinstance(event.get("text"), str):
        return [_dumps({**event, "text": p}) for p in _pieces(event, "text", max_bytes)]
    if kind == "run.active" and isinstance(event.get("text"), str):
        first, *rest = _pieces(event, "text", max_bytes) or [""]
        head = encode({**event, "text": first}, max_bytes=max_bytes)
        return head + [_dumps({"type": "answer.delta", "text": p}) for p in rest]
    return [_truncated(event, max_bytes)]


def split_text(text: str, budget: int) -> list[str]:
    """``text`` in consecutive pieces whose JSON string form is at most ``budget`` bytes."""
    budget = max(budget, 16)
    pieces: list[str] = []
    start = 0
    while start < len(text):
        size = min(len(text) - start, budget)
        while size > 1:
            encoded = _encoded_len(text[start : start + size])
            if encoded <= budget:
                break
            size = min(size - 1, size * budget // encoded)
        pieces.append(text[start : start + max(size, 1)])
        start += max(size, 1)
    return pieces


def _pieces(event: dict[str, Any], field: str, max_bytes: int) -> list[str]:
    overhead = len(_dumps({**event, field: ""}))
    return split_text(event[field], max_bytes - overhead)


def _truncated(event: dict[str, Any], max_bytes: int) -> str:
    event = dict(event)
    if "html" in event:
        event.pop("html")
        event["html_omitted"] = True
    for _ in range(16):
        text = _dumps(event)
        if len(text) <= max_bytes:
            return text
        fields = [k for k, v in event.items() if isinstance(v, str) and k != "type"]
        if not fields:
            break
        field = max(fields, key=lambda k: len(event[k]))
        value = event[field]
        marker = MARKER.format(count=len(value))
        room = max_bytes - len(_dumps({**event, field: ""})) - _encoded_len(marker)
        kept = split_text(value, room)[0] if room > 16 and value else ""
        event[field] = kept + MARKER.format(count=len(value) - len(kept))
        event["truncated"] = True
    logger.error("an outgoing %s frame could not be cut to size", event.get("type"))
    return _dumps(
        {
            "type": "error",
            "code": "frame_too_large",
            "message": gettext(
                "An update was too large to send; reload the conversation to see it."
            ),
        }
    )


def _dumps(value: Any) -> str:
    # The same encoding Channels' send_json uses (ASCII with escapes), so sizes are exact.
    return json.dumps(value)


def _encoded_len(text: str) -> int:
    return len(json.dumps(text))
