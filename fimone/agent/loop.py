"""The ReAct iteration loop, shared by ReAct mode and every DAG step's sub-agent (SPEC RR).

Each iteration: drain injected follow-ups (RP.1) → prune old bulky tool results → the
ContextGuard with the loop's own budget (R3.1) → one non-streaming ``chat()`` with the tools
(RR.2) → run the requested tools (concurrently when the model asks for several).

How the final answer is produced (RR.2, decided here): when the model answers without
calling a tool, that non-streaming reply already *is* the complete answer. Asking the model
a second time through ``stream_chat()`` would pay for the whole context again, make the user
wait for the answer twice, and could give a different answer than the one the loop accepted.
So the loop streams that text as ``answer.delta`` events itself. ``stream_chat()`` is used
whenever the answer still has to be written: the tool-free reply was empty, or the
iteration limit was reached (then the model gets a note to answer with what it has, and the
answer opens with an honest "I stopped after N steps…"). The DAG's final synthesis always
streams (fimone/agent/dag.py).

A provider ``ContextOverflow`` (our estimate said it fits, the provider disagreed) triggers
one forced compaction to half the estimated size and one retry; a second overflow
propagates. Other LLM errors and cancellation propagate; compaction failures never do (the
guard falls back to truncation, R3.7).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from contextmgmt.core.guard import ContextGuard
from contextmgmt.core.llm import LLM, ContextOverflow, LLMResult, Usage
from contextmgmt.core.messages import ChatMessage, ToolCall
from contextmgmt.core.tokens import estimate_messages_tokens

from .calls import chat_once, stream_text
from .context import EventSink, InjectionQueue
from .prompts import LIMIT_NOTE, limit_preface
from .pruning import prune_tool_results
from .tools import ToolRegistry

PREVIEW_CHARS = 2_000
REPLAY_CHUNK_CHARS = 1_000
NO_ANSWER = "I could not produce an answer this time. Please try again or rephrase."


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """A result cut for an event (the model still gets the whole text)."""
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit:,} more chars]"


@dataclass
class LoopConfig:
    llm: LLM
    guard: ContextGuard
    budget: int
    tools: ToolRegistry
    sink: EventSink
    max_iterations: int = 8
    llm_timeout: float | None = None
    llm_stream_timeout: float | None = None
    # "iteration" for ReAct mode, "step" inside a DAG step (the compact event's scope).
    scope: str = "iteration"
    # Stream the answer to the user as answer.delta (ReAct); a DAG step does not.
    stream: bool = True
    injections: InjectionQueue | None = None
    # Added to every step/compact event (a DAG step's id).
    event_extra: dict[str, Any] = field(default_factory=dict)
    # The guard's compaction hint (R3.5): the loop's own reasoning chain by default.
    hint: str = "react_iteration"


@dataclass
class LoopResult:
    answer: str
    status: Literal["done", "limit"]
    iterations: int
    usage: Usage
    compactions: list[dict[str, Any]]
    messages: list[ChatMessage]


class ReactLoop:
    def __init__(self, cfg: LoopConfig) -> None:
        self.cfg = cfg
        self.usage = Usage()
        self.compactions: list[dict[str, Any]] = []

    async def run(self, messages: list[ChatMessage]) -> LoopResult:
        cfg = self.cfg
        messages = list(messages)
        tools = cfg.tools.openai_tools() or None
        for iteration in range(1, cfg.max_iterations + 1):
            if cfg.injections is not None:
                messages.extend(cfg.injections.drain())
            messages = await self._fit(messages)
            result, messages = await self._call(
                messages, lambda m: chat_once(cfg.llm, m, tools=tools, time_limit=cfg.llm_timeout)
            )
            reply = result.message
            if not reply.tool_calls:
                late = cfg.injections.drain() if cfg.injections is not None else []
                if late:
                    # A follow-up arrived while the model wrote: it must see the follow-up
                    # before anything reaches the user.
                    messages.append(_as_assistant(reply))
                    messages.extend(late)
                    if iteration < cfg.max_iterations:
                        continue
                    answer = await self.write_answer(messages, note=None)
                    return self._result(answer or NO_ANSWER, "done", iteration, messages)
                answer = reply.text().strip()
                if answer:
                    await self._replay(answer)
                else:
                    answer = await self.write_answer(messages, note=None)
                return self._result(answer or NO_ANSWER, "done", iteration, messages)
            messages = await self._act(iteration, reply, messages)
        answer = await self.write_answer(messages, note=LIMIT_NOTE.format(steps=cfg.max_iterations))
        answer = limit_preface(cfg.max_iterations) + answer
        return self._result(answer, "limit", cfg.max_iterations, messages)

    # --- context --------------------------------------------------------------------

    async def _fit(self, messages: list[ChatMessage], budget: int | None = None) -> list:
        """Prune, then the guard; emit ``compact`` when the guard compacted."""
        cfg = self.cfg
        messages = prune_tool_results(messages)
        fitted = await cfg.guard.check_and_compact(
            messages, budget=budget or cfg.budget, hint=cfg.hint
        )
        last = cfg.guard.last
        if last is not None and last.strategy != "none":
            payload = {
                "scope": cfg.scope,
                "strategy": last.strategy,
                "original_count": last.original_count,
                "compacted_count": last.compacted_count,
                "tokens_before": last.tokens_before,
                "tokens_after": last.tokens_after,
                **cfg.event_extra,
            }
            self.compactions.append(payload)
            await cfg.sink("compact", payload)
        return list(fitted)

    async def _call(
        self,
        messages: list[ChatMessage],
        call: Callable[[list[ChatMessage]], Awaitable[Any]],
        can_retry: Callable[[], bool] = lambda: True,
    ) -> tuple[Any, list[ChatMessage]]:
        """Make a call; on a provider overflow compact once to half the size and retry once."""
        try:
            result = await call(messages)
        except ContextOverflow:
            if not can_retry():
                raise
            estimate = estimate_messages_tokens(messages)
            forced = max(1, min(self.cfg.budget, estimate) // 2)
            messages = await self._fit(messages, budget=forced)
            result = await call(messages)
        if isinstance(result, LLMResult):
            self.usage.add(result.usage)
        return result, messages

    # --- tools ----------------------------------------------------------------------

    async def _act(
        self, iteration: int, reply: ChatMessage, messages: list[ChatMessage]
    ) -> list[ChatMessage]:
        cfg = self.cfg
        calls = [
            tc
            if tc.id
            else ToolCall(id=f"call_{iteration}_{i}", name=tc.name, arguments=tc.arguments)
            for i, tc in enumerate(reply.tool_calls or [])
        ]
        messages.append(_as_assistant(reply, calls))
        if reply.text().strip():
            await self._event(iteration, "thought", text=preview(reply.text().strip()))
        for tc in calls:
            await self._event(
                iteration, "tool_call", name=tc.name, arguments=preview(tc.arguments), call_id=tc.id
            )
        results = await asyncio.gather(*(cfg.tools.run(tc.name, tc.arguments) for tc in calls))
        for tc, text in zip(calls, results, strict=True):
            messages.append(ChatMessage(role="tool", content=text, tool_call_id=tc.id))
            await self._event(
                iteration, "tool_result", name=tc.name, result=preview(text), call_id=tc.id
            )
        return messages

    async def _event(self, iteration: int, kind: str, **fields: Any) -> None:
        await self.cfg.sink(
            "step", {"iteration": iteration, "kind": kind, **fields, **self.cfg.event_extra}
        )

    # --- answers --------------------------------------------------------------------

    async def _replay(self, answer: str) -> None:
        if not self.cfg.stream:
            return
        for start in range(0, len(answer), REPLAY_CHUNK_CHARS):
            await self.cfg.sink(
                "answer.delta", {"text": answer[start : start + REPLAY_CHUNK_CHARS]}
            )

    async def write_answer(self, messages: list[ChatMessage], *, note: str | None) -> str:
        """Have the model write the answer without tools (streamed when the loop streams)."""
        cfg = self.cfg
        if note is not None:
            messages.append(ChatMessage(role="system", content=note))
        messages[:] = await self._fit(messages)
        if note is not None and cfg.stream:
            await cfg.sink("answer.delta", {"text": limit_preface(cfg.max_iterations)})
        if not cfg.stream:
            result, _ = await self._call(
                messages, lambda m: chat_once(cfg.llm, m, time_limit=cfg.llm_timeout)
            )
            return result.message.text().strip()
        sent = False

        async def on_text(text: str) -> None:
            nonlocal sent
            sent = True
            await cfg.sink("answer.delta", {"text": text})

        async def streamed(m: list[ChatMessage]) -> tuple[str, Usage]:
            return await stream_text(
                cfg.llm,
                m,
                on_text=on_text,
                time_limit=cfg.llm_timeout,
                stream_limit=cfg.llm_stream_timeout,
            )

        # Never retry once the user has seen part of an answer.
        (text, usage), _ = await self._call(messages, streamed, can_retry=lambda: not sent)
        self.usage.add(usage)
        return text.strip()

    def _result(
        self, answer: str, status: Literal["done", "limit"], iterations: int, messages: list
    ) -> LoopResult:
        return LoopResult(answer, status, iterations, self.usage, self.compactions, messages)


def _as_assistant(reply: ChatMessage, calls: list[ToolCall] | None = None) -> ChatMessage:
    """The model's reply as it goes back into the context (fresh object, no metadata)."""
    return dataclasses.replace(
        reply,
        role="assistant",
        tool_calls=calls if calls is not None else reply.tool_calls,
        pinned=False,
        injected=False,
        metadata={},
    )
