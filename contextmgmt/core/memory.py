"""Layer-1 memories: primitives for tests and for embedding the core without Django.

Production uses ``contextmgmt.db_memory.DbMemory``; these keep messages in process.
All share one contract (tests/contextmgmt/core/test_memory_contract.py): ``get_messages``
returns a new list, oldest first, system messages first, never an orphan tool message;
``clear`` forgets everything.
"""

from __future__ import annotations

import abc
from typing import Any

from .compact import _recent_units, _units
from .llm import Usage
from .messages import ChatMessage
from .summarise import summarise


class BaseMemory(abc.ABC):
    """``add_message`` / ``get_messages`` / ``clear``, all async."""

    @abc.abstractmethod
    async def add_message(self, message: ChatMessage) -> None: ...

    @abc.abstractmethod
    async def get_messages(self) -> list[ChatMessage]: ...

    @abc.abstractmethod
    async def clear(self) -> None: ...


def _drop_leading_tool_results(messages: list[ChatMessage]) -> list[ChatMessage]:
    """A window cut can separate tool results from their call: those are dropped."""
    start = 0
    while start < len(messages) and messages[start].role == "tool":
        start += 1
    return messages[start:]


class WindowMemory(BaseMemory):
    """The last ``max_messages`` non-system messages plus every system message."""

    def __init__(self, max_messages: int = 20) -> None:
        if max_messages < 1:
            raise ValueError("max_messages must be at least 1")
        self.max_messages = max_messages
        self._system: list[ChatMessage] = []
        self._messages: list[ChatMessage] = []

    async def add_message(self, message: ChatMessage) -> None:
        if message.role == "system":
            self._system.append(message)
            return
        self._messages.append(message)
        if len(self._messages) > self.max_messages:
            del self._messages[: len(self._messages) - self.max_messages]

    async def get_messages(self) -> list[ChatMessage]:
        return [*self._system, *_drop_leading_tool_results(self._messages)]

    async def clear(self) -> None:
        self._system.clear()
        self._messages.clear()


class SummaryMemory(BaseMemory):
    """Summarises old messages into one ``[Conversation summary]`` message.

    When more than ``threshold`` non-system messages are held, all but the newest
    ``keep_recent`` (whole tool-call units) are summarised by ``llm``; an earlier summary is
    folded into the new one. If the LLM fails, nothing is lost: the messages stay as they
    are, the error is kept in ``last_error``, and the next ``add_message`` tries again.
    """

    def __init__(
        self,
        llm: Any,
        threshold: int = 20,
        keep_recent: int = 4,
        *,
        max_summary_tokens: int = 2_000,
        timeout: float | None = 60.0,
    ) -> None:
        if threshold < 1 or keep_recent < 0 or keep_recent >= threshold:
            raise ValueError("need threshold >= 1 and 0 <= keep_recent < threshold")
        self.llm = llm
        self.threshold = threshold
        self.keep_recent = keep_recent
        self.max_summary_tokens = max_summary_tokens
        self.timeout = timeout
        self.usage = Usage()
        self.last_error: str | None = None
        self._system: list[ChatMessage] = []
        self._summary: ChatMessage | None = None
        self._messages: list[ChatMessage] = []

    async def add_message(self, message: ChatMessage) -> None:
        if message.is_summary:
            self._summary = message
        elif message.role == "system":
            self._system.append(message)
        else:
            self._messages.append(message)
        if len(self._messages) > self.threshold:
            await self._summarise()

    async def _summarise(self) -> None:
        units = _units(self._messages)
        if units and not units[-1].valid:
            return  # a tool call still waits for its result: summarise once it has arrived
        kept = _recent_units(units, [], self.keep_recent)
        cut = kept[0].start if kept else len(self._messages)
        old = self._messages[:cut]
        if not old:
            return
        source = [self._summary, *old] if self._summary else old
        summary, usage, error, _facts = await summarise(
            source,
            self.llm,
            hint="general",
            max_summary_tokens=self.max_summary_tokens,
            timeout=self.timeout,
        )
        self.usage.add(usage)
        self.last_error = error
        if summary is None:
            return
        self._summary = summary
        self._messages = self._messages[cut:]

    async def get_messages(self) -> list[ChatMessage]:
        summary = [self._summary] if self._summary else []
        return [*self._system, *summary, *_drop_leading_tool_results(self._messages)]

    async def clear(self) -> None:
        self._system.clear()
        self._summary = None
        self._messages.clear()
        self.last_error = None
