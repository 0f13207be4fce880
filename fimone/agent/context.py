"""What an engine run receives and returns: the interfaces to the chat layer.

The engines are framework-free. Transport comes in as an ``EventSink`` (an async callable
taking an event name and a JSON-able payload, see docs/protocol.md), follow-up messages
typed while a run is active come in through an ``InjectionQueue``, and tools through a
``ToolRegistry``. Persistence stays with the caller.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from contextmgmt.core.compact import CompactResult
from contextmgmt.core.llm import LLM, Usage
from contextmgmt.core.messages import ChatMessage

from .approval import Approve
from .tools import ToolRegistry

EventSink = Callable[[str, dict], Awaitable[None]]
# Told of every compaction an engine makes: (scope, result). The chat layer stores a summary
# of loaded history from it, as it stores a load-time one, and returns its id (or None).
CompactionHook = Callable[[str, CompactResult], Awaitable[Any]]

# The fact check's lists shown with a summary: the first this many of each.
MAX_FACTS_SHOWN = 100


def summary_facts(result: CompactResult) -> dict[str, Any]:
    """What a ``compact`` event carries about an LLM summary, so that the user can open it:
    the text exactly as the model got it, the facts the fact check put back and those it
    found missing, and how many messages it stands for."""
    summary = next((m for m in reversed(result.messages) if m.is_summary), None)
    return {
        "summary": summary.text() if summary is not None else "",
        "summarized_count": result.summarized_count,
        "facts_appended": result.appended_facts[:MAX_FACTS_SHOWN],
        "facts_missing": result.missing_facts[:MAX_FACTS_SHOWN],
    }


def earlier_turns(history: list[ChatMessage]) -> list[ChatMessage]:
    """The loaded history as this run carries it (copies where a flag changes).

    A message the user pinned ("keep verbatim") stays pinned and is marked yieldable
    (``injected``): like a follow-up, the guard lets it go oldest-first when pinned text
    passes its 50% cap, and it never counts as a second current query. An earlier
    follow-up the user did not pin is an ordinary turn now.
    """
    out = []
    for m in history:
        if m.pinned and not m.injected:
            m = dataclasses.replace(m, injected=True, metadata=dict(m.metadata))
        elif m.injected and not m.pinned:
            m = dataclasses.replace(m, injected=False, metadata=dict(m.metadata))
        out.append(m)
    return out


class InjectionQueue:
    """Follow-ups the user sends while a run is active, read by the engine between steps.

    The chat layer calls ``put_nowait``; the engine calls ``drain()`` at the top of each
    iteration and gets copies marked ``pinned=True, injected=True`` (the guard may unpin
    injected messages oldest-first under the 50% cap, but never the current query).
    """

    def __init__(self) -> None:
        self._queue: asyncio.Queue[ChatMessage] = asyncio.Queue()
        self._expected = 0  # announced follow-ups still being loaded
        self._settled = asyncio.Event()
        self._settled.set()

    def put_nowait(self, message: ChatMessage) -> None:
        self._queue.put_nowait(message)

    def expect(self) -> None:
        """A follow-up was announced and is being loaded: ``drain_settled`` waits for it.
        Pair every call with ``expected_done`` (loaded and put, or given up)."""
        self._expected += 1
        self._settled.clear()

    def expected_done(self) -> None:
        self._expected = max(0, self._expected - 1)
        if self._expected == 0:
            self._settled.set()

    async def drain_settled(self, wait: float) -> list[ChatMessage]:
        """``drain()`` once the follow-ups announced so far are loaded (at most ``wait``
        seconds): an engine about to end its run takes one the user sent just before."""
        if self._expected:
            try:
                await asyncio.wait_for(self._settled.wait(), wait)
            except TimeoutError:
                pass  # what is still loading is answered by a follow-up run
        return self.drain()

    def empty(self) -> bool:
        return self._queue.empty()

    def drain(self) -> list[ChatMessage]:
        out: list[ChatMessage] = []
        while True:
            try:
                msg = self._queue.get_nowait()
            except asyncio.QueueEmpty:
                return out
            out.append(
                dataclasses.replace(msg, pinned=True, injected=True, metadata=dict(msg.metadata))
            )


@dataclass
class AgentContext:
    """Everything one engine run needs. Budgets are usable input tokens (context minus output)."""

    llm: LLM
    fast_llm: LLM
    compact_llm: LLM | None
    main_budget: int
    fast_budget: int
    history: list[ChatMessage]
    query: ChatMessage
    sink: EventSink
    injections: InjectionQueue
    tools: ToolRegistry
    system_prompt: str | None = None
    # Standing instructions (the caller's text, framed as it wants them read): sent whole
    # after the system prompt of every call the run makes, main model and DAG steps alike,
    # counted first and never compacted (contextmgmt.core.instructions).
    instructions: str = ""
    max_iterations: int = 8
    # Seconds one LLM call may take (a stream: the wait for each chunk); None: unbounded
    # here, only the client's own timeout. Compaction calls get at most this long too.
    llm_timeout: float | None = None
    # Seconds a whole streamed answer may take; None: 5 × llm_timeout (fimone.agent.calls).
    llm_stream_timeout: float | None = None
    on_compaction: CompactionHook | None = None
    # The user's interface language (a code such as "zh-hans"): the few sentences the
    # engine writes itself (fimone.agent.wording) are in it.
    language: str = "en"
    # Whether the fast model (DAG steps) can see images: if not, a step gets the query's
    # images as their descriptions (``query.metadata[IMAGE_NOTES]``).
    fast_vision: bool = False
    # Asked before a tool marked needs_approval runs (fimone.agent.approval); None: such a
    # tool does not run.
    approve: Approve | None = None
    # Tools the conversation called before, most recent first: when the tool definitions
    # are cut to a finder, these are sent too (fimone.agent.tools.finder).
    used_tools: tuple[str, ...] = ()


@dataclass
class AgentOutcome:
    """The result of a run.

    ``usage`` counts the engine's own LLM calls (tool iterations, plans, steps, verdicts,
    answers); ``compaction_usage`` counts every compaction call made during the run (the UI
    shows both in the usage line).
    ``iterations`` is the number of ReAct iterations (ReAct) or plan-execute-analyse rounds
    (DAG). ``compactions`` holds the payload of every ``compact`` event emitted.
    """

    answer: str
    usage: Usage = field(default_factory=Usage)
    compaction_usage: Usage = field(default_factory=Usage)
    iterations: int = 0
    compactions: list[dict[str, Any]] = field(default_factory=list)
    status: Literal["done", "limit"] = "done"
