"""The ReAct iteration loop, shared by ReAct mode and every DAG step's sub-agent.

Each iteration: drain injected follow-ups → the ContextGuard with the loop's own budget
(past half the budget it masks old tool results, before it summarises anything; stubs
are only ever appended, so every call sends the previous call's prefix up to its last
stub) → one *streaming* call with the tools → run the requested tools (concurrently
when the model asks for several); images a tool brought back (``recall`` finding an
earlier image) follow the tool results as one user message.

Every call streams, and its text goes out as it arrives (docs/protocol.md, "Streaming"):
in ReAct mode as ``answer.delta``; inside a DAG step as ``dag.step.delta`` (the plan shows
the step's progress live). The iteration whose reply calls no tool *is* the answer: nothing
is asked twice. When a reply turns out to call a tool after writing some text, that text
was the step's reasoning, not the answer: ``answer.retract {iteration, chars, text}`` tells
the client to take the last ``chars`` characters back out of the answer and show ``text``
in the step as a thought. A reply that was written whole before a follow-up arrived stays
in the answer (the user watched it): the model reads the follow-up next, and its reply
follows after a blank line (``PART_SEPARATOR``), live and in the stored answer. A second,
tool-free call writes the answer only when the tool-free reply was empty, or when the
iteration limit was reached (then the model gets a note to answer with what it has, and
the answer opens with an honest "I stopped after N steps…").

A provider ``ContextOverflow`` (our estimate said it fits, the provider disagreed) before
any text was shown triggers one forced compaction to half the estimated size and one retry;
a second overflow propagates. That half-size summary is not offered for storing
(``on_compaction``): later requests start from one written at the ordinary size. Other
LLM errors (a stream cut off or failing mid-way included) and cancellation propagate, after
the text received so far went out; compaction failures never do (the guard falls back to
truncation).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from contextmgmt.core.guard import ContextGuard
from contextmgmt.core.llm import LLM, ContextOverflow, LLMNotice, LLMResult, Usage
from contextmgmt.core.masking import masked_facts
from contextmgmt.core.messages import STEP_REASONING, ChatMessage, ToolCall
from contextmgmt.core.tokens import estimate_messages_tokens

from .approval import ApprovalRequest, Approve, declined_result, no_approver_result
from .calls import stream_reply
from .context import CompactionHook, EventSink, InjectionQueue, summary_facts
from .prompts import LIMIT_NOTE, limit_preface
from .tools import ToolOutput, ToolRegistry
from .tools.finder import ToolOffer
from .wording import say

PREVIEW_CHARS = 2_000
# Between a reply kept in the answer when a follow-up arrived and the text that follows it.
PART_SEPARATOR = "\n\n"
# Before it ends, a run waits at most this long for follow-ups announced to it and still
# being loaded (a database hop, longer on a busy server); later ones get a run of their own.
LATE_FOLLOW_UP_WAIT = 2.0
_RECALLED_IMAGES = {"type": "text", "text": "[Images brought back by the tool results above]"}


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
    # Where a loop that does not stream its answer sends its text as it arrives (a DAG
    # step's progress); None drops it.
    on_progress: Callable[[str], Awaitable[None]] | None = None
    injections: InjectionQueue | None = None
    # Added to every step/compact event (a DAG step's id).
    event_extra: dict[str, Any] = field(default_factory=dict)
    # The guard's compaction hint: the loop's own reasoning chain by default.
    hint: str = "react_iteration"
    # The user's language, for the sentences the loop writes itself (fimone.agent.wording).
    language: str = "en"
    on_compaction: CompactionHook | None = None
    # Asked before a tool marked needs_approval runs (fimone.agent.approval); without it
    # such a tool does not run.
    approve: Approve | None = None
    # Which tool definitions go with each call, and the tools run (its registry); None:
    # every tool of ``tools``, all sent.
    offer: ToolOffer | None = None


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
        self.tools = cfg.offer.registry if cfg.offer is not None else cfg.tools
        self.usage = Usage()
        self.compactions: list[dict[str, Any]] = []
        # Replies that streamed whole before a follow-up arrived (they stay in the answer).
        self._parts: list[str] = []
        self._separate = False  # the next answer text follows a kept part

    async def run(self, messages: list[ChatMessage]) -> LoopResult:
        cfg = self.cfg
        messages = list(messages)
        for iteration in range(1, cfg.max_iterations + 1):
            if cfg.injections is not None:
                messages.extend(cfg.injections.drain())
            messages = await self._fit(messages)
            # Asked each time: a tool find_tools found joins the definitions after the others.
            tools = cfg.offer.definitions() if cfg.offer is not None else cfg.tools.openai_tools()
            reply, shown = await self._reply(messages, tools or None)
            messages = reply.messages
            if not reply.message.tool_calls:
                late = (
                    await cfg.injections.drain_settled(LATE_FOLLOW_UP_WAIT)
                    if cfg.injections is not None
                    else []
                )
                if late:
                    # A follow-up arrived while the model wrote: it reads the follow-up next,
                    # but what the user watched stream stays a finished part of the answer.
                    self._keep_part(reply.message.text().strip())
                    messages.append(_as_assistant(reply.message))
                    messages.extend(late)
                    if iteration < cfg.max_iterations:
                        continue
                    answer = await self.write_answer(messages, note=None)
                    return self._result(self._whole(answer), "done", iteration, messages)
                answer = reply.message.text().strip()
                if not answer:
                    answer = await self.write_answer(messages, note=None)
                return self._result(self._whole(answer), "done", iteration, messages)
            await self._retract(iteration, reply.message, shown)
            messages = await self._act(iteration, reply.message, messages)
        answer = await self.write_answer(messages, note=LIMIT_NOTE.format(steps=cfg.max_iterations))
        answer = limit_preface(cfg.max_iterations, cfg.language) + answer
        return self._result(self._whole(answer), "limit", cfg.max_iterations, messages)

    def _keep_part(self, text: str) -> None:
        """A reply that streamed in full before a follow-up arrived: it stays in the answer
        (the user read it), and whatever the model writes next follows it after a blank line."""
        if text:
            self._parts.append(text)
            self._separate = True

    def _whole(self, answer: str) -> str:
        """The answer as the user saw it stream: the parts kept before follow-ups, then the
        last reply; the fallback sentence only when there is nothing at all."""
        whole = PART_SEPARATOR.join([*self._parts, answer] if answer else self._parts)
        return whole or say("no_answer", self.cfg.language)

    async def _answer_delta(self, text: str) -> int:
        """Stream ``text`` as answer; returns how many characters went out (a blank line
        before the first text that follows a kept part included)."""
        sent = 0
        if self._separate:
            self._separate = False
            await self.cfg.sink("answer.delta", {"text": PART_SEPARATOR})
            sent += len(PART_SEPARATOR)
        await self.cfg.sink("answer.delta", {"text": text})
        return sent + len(text)

    async def _reply(
        self, messages: list[ChatMessage], tools: list[dict[str, Any]] | None
    ) -> tuple[_Reply, int]:
        """One streamed call; its text goes out as it arrives. Returns the reply (with the
        messages it was made on) and how many characters of it were streamed as answer."""
        cfg = self.cfg
        shown = 0
        thought = False

        async def on_reasoning(text: str) -> None:
            # The model's reasoning: to the user apart from the answer (ReAct only).
            nonlocal thought
            if cfg.stream:
                thought = True
                await cfg.sink("reasoning.delta", {"text": text})

        async def on_text(text: str) -> None:
            nonlocal shown
            if cfg.stream:
                shown += await self._answer_delta(text)
            elif cfg.on_progress is not None:
                await cfg.on_progress(text)

        async def on_notice(notice: LLMNotice) -> None:
            # The answer will arrive at once, or the endpoint asked us to wait: say so.
            await cfg.sink("llm.notice", {**notice.as_dict(), **cfg.event_extra})

        async def streamed(m: list[ChatMessage]) -> LLMResult:
            return await stream_reply(
                cfg.llm,
                m,
                on_text=on_text,
                on_reasoning=on_reasoning,
                on_notice=on_notice,
                tools=tools,
                time_limit=cfg.llm_timeout,
                stream_limit=cfg.llm_stream_timeout,
            )

        # Never retry once the user has seen part of a reply.
        result, messages = await self._call(
            messages, streamed, can_retry=lambda: shown == 0 and not thought
        )
        return _Reply(result.message, messages), shown

    async def _retract(self, iteration: int, reply: ChatMessage, shown: int) -> None:
        """Move the text streamed as answer into the step, as a thought."""
        if not shown:
            return
        # The blank line after a kept part went with the text: the next text needs one again.
        self._separate = bool(self._parts)
        await self.cfg.sink(
            "answer.retract",
            {
                "iteration": iteration,
                "chars": shown,
                "text": preview(reply.text().strip()),
                **self.cfg.event_extra,
            },
        )

    # --- context --------------------------------------------------------------------

    async def _fit(
        self, messages: list[ChatMessage], budget: int | None = None, *, overflow: bool = False
    ) -> list:
        """The guard; emit ``compact`` when it masked or compacted.

        ``overflow``: an emergency fit to half the size after the provider refused the
        request. Its summary serves this run only: it is not offered for storing, so the
        next request starts from a summary written at the ordinary size."""
        cfg = self.cfg
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
                # What the compaction itself cost (its summariser calls): the ledger's debit.
                "cost_input_tokens": last.usage.input_tokens,
                "cost_output_tokens": last.usage.output_tokens,
                **cfg.event_extra,
            }
            if last.masked:
                # Listed apart from what was summarised (the note and the receipt show it).
                payload.update(masked_facts(last.masked))
            if last.results_cut:
                # Unread results cut to the room left, each ending with how to read on.
                payload["results_cut"] = [dataclasses.asdict(c) for c in last.results_cut]
            if last.strategy == "llm":
                payload.update(summary_facts(last))
            if overflow:
                payload["overflow_retry"] = True
            elif cfg.on_compaction is not None:
                # Told first: a summary it stores is named in the event (the UI opens it).
                stored = await cfg.on_compaction(cfg.scope, last)
                if stored is not None:
                    payload["summary_id"] = stored
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
            messages = await self._fit(messages, budget=forced, overflow=True)
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
        if reply.text().strip() and not cfg.stream:
            # A streamed thought was already moved into the step by answer.retract.
            await self._event(iteration, "thought", text=preview(reply.text().strip()))
        for tc in calls:
            await self._event(
                iteration, "tool_call", name=tc.name, arguments=preview(tc.arguments), call_id=tc.id
            )
        results = await asyncio.gather(*(self._run_tool(iteration, tc) for tc in calls))
        images: list[dict[str, Any]] = []
        for tc, output in zip(calls, results, strict=True):
            messages.append(ChatMessage(role="tool", content=output.text, tool_call_id=tc.id))
            # Kept whole for this run: a masked result is brought back by its id (recall).
            self.tools.remember(tc, output.text)
            images.extend(output.images)
            await self._event(
                iteration, "tool_result", name=tc.name, result=preview(output.text), call_id=tc.id
            )
        if images:
            # A tool message carries text only: images a tool brought back (recall) reach the
            # model as a user message right after the results, with the next call.
            messages.append(ChatMessage(role="user", content=[_RECALLED_IMAGES, *images]))
        return messages

    async def _run_tool(self, iteration: int, call: ToolCall) -> ToolOutput:
        """Run one call; a tool that needs approval runs only once the user approved it."""
        cfg = self.cfg
        tool = self.tools.get(call.name)
        if tool is not None and tool.needs_approval:
            problem = self.tools.problem(call.name, call.arguments)
            if problem is not None:
                return ToolOutput(problem)  # nothing to approve: the model corrects it
            if cfg.approve is None:
                return ToolOutput(no_approver_result(call.name))
            request = ApprovalRequest(
                tool=tool,
                arguments=call.arguments or "{}",
                call_id=call.id,
                iteration=iteration,
                extra=dict(cfg.event_extra),
            )
            if await cfg.approve(request) == "decline":
                return ToolOutput(declined_result(call.name))
        return await self.tools.run_output(call.name, call.arguments)

    async def _event(self, iteration: int, kind: str, **fields: Any) -> None:
        await self.cfg.sink(
            "step", {"iteration": iteration, "kind": kind, **fields, **self.cfg.event_extra}
        )

    # --- answers --------------------------------------------------------------------

    async def write_answer(self, messages: list[ChatMessage], *, note: str | None) -> str:
        """Have the model write the answer without tools, streamed as it arrives."""
        cfg = self.cfg
        if note is not None:
            messages.append(ChatMessage(role="system", content=note))
        messages[:] = await self._fit(messages)
        if note is not None and cfg.stream:
            await self._answer_delta(limit_preface(cfg.max_iterations, cfg.language))
        reply, _ = await self._reply(messages, None)
        return reply.message.text().strip()

    def _result(
        self, answer: str, status: Literal["done", "limit"], iterations: int, messages: list
    ) -> LoopResult:
        return LoopResult(answer, status, iterations, self.usage, self.compactions, messages)


@dataclass
class _Reply:
    message: ChatMessage
    messages: list[ChatMessage]  # what the call was made on (compacted after an overflow)


def _as_assistant(reply: ChatMessage, calls: list[ToolCall] | None = None) -> ChatMessage:
    """The model's reply as it goes back into the context (fresh object). Of its metadata
    only a tool-calling step's reasoning stays (``STEP_REASONING``): the client sends it
    back within this turn where the provider wants it."""
    tool_calls = calls if calls is not None else reply.tool_calls
    reasoning = reply.metadata.get("reasoning")
    kept = {STEP_REASONING: reasoning} if tool_calls and isinstance(reasoning, str) else {}
    return dataclasses.replace(
        reply,
        role="assistant",
        tool_calls=tool_calls,
        pinned=False,
        injected=False,
        metadata=kept,
    )
