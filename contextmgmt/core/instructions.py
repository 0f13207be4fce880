"""The instructions tier: standing instructions sent whole with every call.

The caller hands the core one text (in fimone, a project's instructions and then the
conversation's own, each framed by the chat layer); the core knows nothing of where it
comes from. It goes as a system message of its own, right after the engine's system
prompt, in every call. It is counted first: its tokens come off the budget before the tool
definitions and the history get their shares (``tiers``). It is never compacted (a system
message that is not a summary is kept by every compaction), never masked (masking touches
tool results only), and a summariser is told that it exists and is kept elsewhere, so
that it does not restate it (``prompts.compact_prompt``). See docs/architecture.md,
"Context tiers".
"""

from __future__ import annotations

from collections.abc import Iterable

from .messages import ChatMessage
from .tokens import estimate_message_tokens

# Every instructions message starts with this line: how the core (and the offline model)
# knows the message across copies, as ``SUMMARY_PREFIX`` marks a summary.
INSTRUCTIONS_PREFIX = "[Standing instructions]"
INSTRUCTIONS_INTRO = (
    f"{INSTRUCTIONS_PREFIX} The user set the instructions below for this conversation. "
    "They come whole with every request: follow them in everything you write for the user."
)


class NoRoomForQuery(Exception):
    """The instructions leave the request no room for its question: the window is too
    small for them. Raised before any call is made; the caller tells the user."""

    def __init__(self, *, instructions: int, budget: int, needed: int) -> None:
        self.instructions = instructions
        self.budget = budget
        self.needed = needed
        super().__init__(
            f"the instructions take {instructions:,} of the model's {budget:,} input tokens; "
            f"the request needs {needed:,}"
        )


def instructions_message(text: str) -> ChatMessage | None:
    """The system message carrying ``text`` whole (None when there is none)."""
    text = (text or "").strip()
    if not text:
        return None
    return ChatMessage(role="system", content=f"{INSTRUCTIONS_INTRO}\n\n{text}")


def is_instructions(message: ChatMessage) -> bool:
    return (
        message.role == "system"
        and isinstance(message.content, str)
        and message.content.startswith(INSTRUCTIONS_PREFIX)
    )


def has_instructions(messages: Iterable[ChatMessage]) -> bool:
    return any(is_instructions(m) for m in messages)


def instructions_tokens(text: str) -> int:
    """What the instructions tier takes of every call: 0 without instructions."""
    message = instructions_message(text)
    return estimate_message_tokens(message) if message is not None else 0


def with_instructions(system: ChatMessage, text: str) -> list[ChatMessage]:
    """``system`` (an engine's system prompt), then the instructions message if any."""
    message = instructions_message(text)
    return [system] if message is None else [system, message]


def check_room(budget: int, *, instructions: int, fixed: int) -> None:
    """Raise ``NoRoomForQuery`` when the instructions (``instructions`` tokens) and what
    every request sends besides them (``fixed``: the engine's system prompt, the question)
    pass ``budget``. Without instructions nothing is refused here: the provider has the last
    word, as before."""
    if instructions and instructions + fixed > budget:
        raise NoRoomForQuery(instructions=instructions, budget=budget, needed=instructions + fixed)
