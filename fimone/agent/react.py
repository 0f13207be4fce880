"""ReAct mode: one tool-using loop over the conversation, on the main LLM's budget.

Messages: the system prompt, then the loaded history as it is — including a leading
``[Conversation summary]`` system message, so the load-time summary reaches the model
(FIM One drops it) — then the current query, pinned. A history message the
user pinned stays pinned but may yield under the guard's cap (``earlier_turns``); only the
current query never yields.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from contextmgmt.core.guard import ContextGuard
from contextmgmt.core.instructions import instructions_tokens, with_instructions
from contextmgmt.core.llm import Usage
from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.tokens import estimate_message_tokens

from .calls import compact_limit
from .context import AgentContext, AgentOutcome, earlier_turns
from .loop import LoopConfig, ReactLoop
from .prompts import REACT_SYSTEM
from .tools import ToolRegistry
from .tools.finder import ToolOffer, tool_tier


def tool_schema_tokens(
    tools: ToolRegistry | None,
    main_budget: int,
    *,
    used_tools: Sequence[str] = (),
    instructions: str = "",
) -> int:
    """Tokens the tool definitions sent with every call (outside the messages) take: all
    of them, or past their share of the budget a finder, the tools in use (``used_tools``)
    and room for the ones it finds (``fimone.agent.tools.finder``). The share is of what
    the instructions leave: they are counted first."""
    return tool_tier(tools, after_instructions(main_budget, instructions), used=used_tools).tools


def after_instructions(budget: int, instructions: str) -> int:
    """The budget the instructions tier leaves the tools, the history and the query."""
    return max(1, budget - instructions_tokens(instructions))


def message_budget(
    main_budget: int,
    tools: ToolRegistry | None,
    *,
    used_tools: Sequence[str] = (),
    instructions: str = "",
) -> int:
    """What the messages of one call (the instructions among them) may take: the budget
    less the tool tier."""
    schemas = tool_schema_tokens(
        tools, main_budget, used_tools=used_tools, instructions=instructions
    )
    return max(1, main_budget - schemas)


def history_budget(
    main_budget: int,
    *,
    query: ChatMessage,
    tools: ToolRegistry | None,
    system_prompt: str | None = None,
    follow_ups: Sequence[ChatMessage] = (),
    used_tools: Sequence[str] = (),
    instructions: str = "",
) -> int:
    """Tokens the loaded history may take so that the first call fits as it is sent: the
    budget less the system prompt, the instructions, the tool tier, the current query and
    the follow-ups the run starts with (all of them go into the first call). 0 when
    nothing is left."""
    fixed = first_call_tokens(
        query, follow_ups=follow_ups, system_prompt=system_prompt, instructions=instructions
    )
    room = message_budget(main_budget, tools, used_tools=used_tools, instructions=instructions)
    return max(0, room - fixed)


def first_call_tokens(
    query: ChatMessage,
    *,
    follow_ups: Sequence[ChatMessage] = (),
    system_prompt: str | None = None,
    instructions: str = "",
) -> int:
    """What the first call's messages take besides the history: the system prompt, the
    instructions, the current query and the follow-ups the run starts with."""
    system = ChatMessage(role="system", content=system_prompt or REACT_SYSTEM)
    return instructions_tokens(instructions) + sum(
        estimate_message_tokens(m) for m in (system, query, *follow_ups)
    )


def build_react_messages(ctx: AgentContext) -> list[ChatMessage]:
    system = ChatMessage(role="system", content=ctx.system_prompt or REACT_SYSTEM)
    messages = with_instructions(system, ctx.instructions)
    messages.extend(earlier_turns(ctx.history))
    messages.append(
        dataclasses.replace(
            ctx.query, pinned=True, injected=False, metadata=dict(ctx.query.metadata)
        )
    )
    return messages


def compaction_usage_of(guard: ContextGuard) -> Usage:
    """The guard's cumulative compaction usage, as a fresh ``Usage``."""
    return Usage(guard.usage.input_tokens, guard.usage.output_tokens)


async def run_react(ctx: AgentContext) -> AgentOutcome:
    # The instructions are counted first; the tool definitions go with every call and take
    # their share of what is left; the messages (the instructions among them) get the rest.
    offer = ToolOffer(
        ctx.tools, after_instructions(ctx.main_budget, ctx.instructions), used=ctx.used_tools
    )
    budget = max(1, ctx.main_budget - offer.split.tools)
    guard = ContextGuard(
        compact_llm=ctx.compact_llm,
        budget=budget,
        compact_timeout=compact_limit(ctx.llm_timeout),
    )
    loop = ReactLoop(
        LoopConfig(
            llm=ctx.llm,
            guard=guard,
            budget=budget,
            tools=ctx.tools,
            offer=offer,
            sink=ctx.sink,
            max_iterations=ctx.max_iterations,
            llm_timeout=ctx.llm_timeout,
            llm_stream_timeout=ctx.llm_stream_timeout,
            scope="iteration",
            stream=True,
            injections=ctx.injections,
            on_compaction=ctx.on_compaction,
            language=ctx.language,
            approve=ctx.approve,
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
