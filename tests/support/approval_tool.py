"""A test-only tool that needs the user's approval: ``send_note {text}``, of the tool source
``test``. In-process tests add it through ``make_tools``; a live server loads it with
``FIMONE_EXTRA_TOOLS=tests.support.approval_tool:approval_tools`` (chat.runs.deps)."""

from __future__ import annotations

from fimone.agent import Tool

SOURCE = "test"
NAME = "send_note"
# Every note "sent" in this process, in order (a live server's are in its requests).
SENT: list[str] = []


def send_note_tool() -> Tool:
    async def send_note(text: str) -> str:
        SENT.append(text)
        return f"note sent: {text}"

    return Tool(
        name=NAME,
        description="Send a short note to the team (asks the user first).",
        parameters={
            "type": "object",
            "properties": {"text": {"type": "string", "description": "the note"}},
            "required": ["text"],
        },
        func=send_note,
        timeout=5.0,
        needs_approval=True,
        source=SOURCE,
    )


def approval_tools() -> list[Tool]:
    return [send_note_tool()]
