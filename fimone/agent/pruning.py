"""Cheap pruning of old, bulky tool results before the guard runs (ReAct).

A tool result the model has already read and acted on is rarely needed verbatim three tool
calls later, yet it keeps costing tokens on every iteration. Before each iteration the
newest ``keep_recent`` tool results stay verbatim; older ones longer than ``min_chars`` are
replaced by a short stub with a preview. The message itself stays — with its
``tool_call_id`` — so every tool call keeps its result (the API rejects orphans). No LLM
call, no token estimate: one pass over the list. The caller's messages are never mutated;
unchanged messages are the same objects (the guard's token cache keeps working).
"""

from __future__ import annotations

import dataclasses

from contextmgmt.core.messages import ChatMessage

KEEP_RECENT_TOOL_RESULTS = 3
PRUNE_MIN_CHARS = 2_000
PREVIEW_CHARS = 300
STUB_PREFIX = "[Older tool result pruned"


def prune_tool_results(
    messages: list[ChatMessage],
    *,
    keep_recent: int = KEEP_RECENT_TOOL_RESULTS,
    min_chars: int = PRUNE_MIN_CHARS,
    preview_chars: int = PREVIEW_CHARS,
) -> list[ChatMessage]:
    """A new list with old bulky tool results stubbed; the input list when nothing changes."""
    out: list[ChatMessage] | None = None
    seen = 0
    # Newest first: one pass, and only old tool results are measured.
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if msg.role != "tool":
            continue
        seen += 1
        if seen <= keep_recent:
            continue
        content = msg.content
        size = len(content) if isinstance(content, str) else len(msg.text())
        if size <= min_chars:
            continue
        text = msg.text()
        if text.startswith(STUB_PREFIX):
            continue
        if out is None:
            out = list(messages)
        preview = text[:preview_chars].rstrip()
        out[i] = dataclasses.replace(
            msg,
            content=(
                f"{STUB_PREFIX}: {len(text):,} characters; it was used in earlier steps. "
                f"Call the tool again if the details are needed. Beginning: {preview} …]"
            ),
            metadata=dict(msg.metadata),
        )
    return messages if out is None else out
