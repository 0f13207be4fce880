"""The message types every layer speaks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]
Content = str | list[dict[str, Any]] | None

SUMMARY_PREFIX = "[Conversation summary]"
# ``metadata`` key: the message's images as text (``[image: name, WxH — description]``), one
# per image part in the parts' order, for a model that cannot or will not see the pixels.
IMAGE_NOTES = "image_notes"
# ``metadata`` key: the reasoning text of a tool-calling assistant message inside the turn
# that made it. Some providers need it back with the following calls of that turn (the
# provider profile's ``reasoning_echo``); it is never stored, so later turns never carry it.
STEP_REASONING = "step_reasoning"
# ``metadata`` key: the notes of the documents sent with the message (inline text or an
# outline), also part of its text, for a part of a run that is given only its task (a DAG
# step).
DOCUMENT_NOTES = "document_notes"
# ``metadata`` key: the facts of the message's fact source (``transcript.fact_source``),
# found once when it was stored (``factstore.stored_facts``): a compaction takes them
# instead of scanning its text again (docs/architecture.md, "Compaction").
STORED_FACTS = "facts"


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # the JSON text, exactly as on the wire

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(slots=True)
class ChatMessage:
    role: Role
    content: Content = None
    name: str | None = None
    tool_call_id: str | None = None
    tool_calls: list[ToolCall] | None = None
    pinned: bool = False
    injected: bool = False
    # Never sent to an LLM: db id, created_at, attachment facts, …
    metadata: dict[str, Any] = field(default_factory=dict)
    # Private: tokens.py's memo of the estimate (its layout is described there), valid while
    # content/tool_calls are the same objects with the same items. Not compared, not shown,
    # not an argument.
    _token_cache: tuple[Any, ...] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def is_current_query(self) -> bool:
        return self.pinned and not self.injected

    @property
    def is_summary(self) -> bool:
        return (
            self.role == "system"
            and isinstance(self.content, str)
            and self.content.startswith(SUMMARY_PREFIX)
        )

    def text(self) -> str:
        """The message's text: the string content, or its text parts joined."""
        if isinstance(self.content, str):
            return self.content
        if not self.content:
            return ""
        return "\n".join(p.get("text", "") for p in self.content if p.get("type") == "text")

    def image_parts(self) -> list[dict[str, Any]]:
        """The images it sends as pixels (``image_url`` parts); none for string content."""
        if not isinstance(self.content, list):
            return []
        return [p for p in self.content if isinstance(p, dict) and p.get("type") == "image_url"]

    def image_text(self) -> str:
        """Its image parts as text, for a reader that gets text only (a transcript, the DAG
        planner's history): their notes (``IMAGE_NOTES``, what each shows) when it carries
        one per image, else a count ("[image]", "[2 images]"); "" without images."""
        count = len(self.image_parts())
        if not count:
            return ""
        notes = self.metadata.get(IMAGE_NOTES)
        if (
            isinstance(notes, list)
            and len(notes) == count
            and all(isinstance(note, str) and note for note in notes)
        ):
            return "\n".join(notes)
        return "[image]" if count == 1 else f"[{count} images]"

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI wire form; fimone's own fields (pinned, metadata, …) never leave."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.name:
            out["name"] = self.name
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.tool_calls:
            out["tool_calls"] = [tc.to_openai() for tc in self.tool_calls]
        return out
