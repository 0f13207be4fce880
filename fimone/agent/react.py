"""ReAct mode: one tool-using loop over the conversation, on the main LLM's budget.

Messages: the system prompt, then the loaded history as it is — including a leading
``[Conversation summary]`` system message, so the load-time summary reaches the model
(FIM One drops it) — then the current query, pinned. History messages are copied
unpinned: only the current query and this run's injected follow-ups are pinned.
"""

from __future__ import annotations

import dataclasses

from contextmgmt.core.guard import ContextGuard
from contextmgmt.core.llm import Usage
from contextmgmt.core.messages import ChatMessage

from .calls import compact_limit
from .context import AgentContext, AgentOutcome, earlier_turns
from .loop import LoopConfig, ReactLoop
from .prompts import REACT_SYSTEM


def build_react_messages(ctx: AgentContext) -> list[ChatMessage]:
    messages = [ChatMessage(role="system", content=ctx.system_prompt or REACT_SYSTEM)]
    messages.extend(earlier_turns(ctx.history))
    messages.append(
        dataclasses.replace(
            ctx.query, pinned=True, injected=False, metadata=dict(ctx.query.metadata)
        )
    )
    return messages


def compaction_usage_of(guard: ContextGuard) -> Usage:
    """The guard's cumulative compaction usage, as a fresh ``Usage``."""
    usage = getattr(guard, "usage", None) or Usage()
    return Usage(usage.input_tokens, usage.output_tokens)


async def run_react(ctx: AgentContext) -> AgentOutcome:
    guard = ContextGuard(
        compact_llm=ctx.compact_llm,
        budget=ctx.main_budget,
        compact_timeout=compact_limit(ctx.llm_timeout),
    )
    loop = ReactLoop(
        LoopConfig(
            llm=ctx.llm,
            guard=guard,
            budget=ctx.main_budget,
            tools=ctx.tools,
            sink=ctx.sink,
            max_iterations=ctx.max_iterations,
            llm_timeout=ctx.llm_timeout,
            llm_stream_timeout=ctx.llm_stream_timeout,
            scope="iteration",
            stream=True,
            injections=ctx.injections,
        )
    )
    result = await loop.run(build_react_messages(ctx))
    return AgentOutcome(
        answer=result.answer,
        usage=result.usage,
        compaction_usage=compaction_usage_of(guard),
        iterations=result.iterations,
        compactions=result.compactions,
        status=result.status,
    )
