"""CompactUtils (SPEC R2): stateless estimation, smart truncation and LLM compaction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from . import tokens
from .llm import Usage
from .messages import ChatMessage

Strategy = Literal["none", "llm", "truncate"]


@dataclass(slots=True)
class CompactResult:
    """What one compaction did (DESIGN §2); ``error`` says why an LLM attempt fell back."""

    messages: list[ChatMessage]
    strategy: Strategy
    original_count: int
    compacted_count: int
    tokens_before: int
    tokens_after: int
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    # Summary fact check: facts of the summarised messages the summary dropped / re-added.
    facts_missing: int = 0
    facts_appended: int = 0


class CompactUtils:
    """Static helpers only: no instances, no state (R2)."""

    @staticmethod
    def estimate_tokens(content: Any) -> int:
        return tokens.estimate_tokens(content)

    @staticmethod
    def estimate_messages_tokens(messages: list[ChatMessage]) -> int:
        return tokens.estimate_messages_tokens(messages)
