"""How much of a request's budget the loaded history gets, as each engine sends it.

ReAct sends the system prompt, the tool schemas, the history, the query and the follow-ups
the run starts with in its first call; DAG sends the history as text with the request to
the planner, under the planner's own limit. What is left is ``send``: a history of that
size reaches the first call without being compacted again (docs/architecture.md,
"Compaction").

``load`` is what DbMemory fits the history to, and what a summary it persists is written
for. Usually the two are equal. When the current request leaves less than half of what an
ordinary one would (a 20,000-character paste), the history is still fitted — and any new
summary written — at the ordinary size, and only this request's copy is cut to ``send``
without an LLM call: one big paste must not shrink the summary every later request
starts from.

``ordinary_request`` is the same sum for a request whose question is not known yet (the
context gauge's), tier by tier: the engine's system prompt, the standing instructions and
the tool definitions it sends besides the history, and what it leaves the history. The
instructions are counted first: the other tiers share what they leave. Past their share of
the budget the tool definitions are a finder and the tools in use
(``fimone.agent.tools.finder``): the history's room is the budget less the share, however
many tools there are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contextmgmt.core.instructions import check_room, instructions_tokens
from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.tokens import estimate_message_tokens

from .dag_context import history_budget as dag_history_budget
from .dag_context import planner_input_limit
from .prompts import PLANNER_SYSTEM, STEP_SYSTEM
from .react import after_instructions, first_call_tokens, message_budget
from .tools import ToolRegistry
from .tools.finder import ToolOffer, definition_tokens


@dataclass(frozen=True, slots=True)
class HistoryRoom:
    send: int  # what the first call leaves for history (tokens, may be 0)
    load: int  # what the history is fitted, and summaries are written, to

    @property
    def squeezed(self) -> bool:
        """Whether this request's copy of the history must be cut below ``load``."""
        return self.send < self.load


def history_room(
    mode: str,
    main_budget: int,
    *,
    query: ChatMessage,
    tools: ToolRegistry | None,
    follow_ups: Sequence[ChatMessage] = (),
    used_tools: Sequence[str] = (),
    instructions: str = "",
) -> HistoryRoom:
    """``used_tools``: the tools the conversation used (sent when the definitions are cut);
    ``instructions``: the standing instructions every call carries."""
    empty = ChatMessage(role="user", content="")
    if mode == "dag":
        # The planner's input gets what the instructions (a system message) leave.
        budget = after_instructions(main_budget, instructions)
        send = dag_history_budget(budget, query=query, tools=tools, follow_ups=follow_ups)
        ordinary = dag_history_budget(budget, query=empty, tools=tools)
    else:
        # The tool tier once (it counts every definition), for both sums.
        messages = message_budget(
            main_budget, tools, used_tools=used_tools, instructions=instructions
        )
        first = first_call_tokens(query, follow_ups=follow_ups, instructions=instructions)
        send = max(0, messages - first)
        ordinary = max(0, messages - first_call_tokens(empty, instructions=instructions))
    load = send if send * 2 >= ordinary else ordinary
    return HistoryRoom(send=send, load=max(1, load))


@dataclass(frozen=True, slots=True)
class OrdinaryRequest:
    """The first call of a request with an empty question, tier by tier."""

    system: int  # the engine's system prompt (ReAct) or the planner's request (DAG)
    instructions: int  # the standing instructions (a project's, a conversation's)
    tools: int  # the tool definitions it sends (ReAct; the DAG planner gets none)
    room: int  # what it leaves the history: a larger history is fitted to this first
    tools_offered: int = 0  # tools whose definitions it sends
    tools_enabled: int = 0  # tools it can call (found with find_tools when not offered)
    tools_deferred: bool = False  # definitions cut to a finder and the tools in use
    tools_share: int = 0  # what the tool definitions may take

    @property
    def fixed(self) -> int:
        """What the request sends besides the history."""
        return self.system + self.instructions + self.tools

    def sends(self, history_tokens: int) -> int:
        """What the request sends in all, before its question, for a stored history of
        ``history_tokens``: never more than the engine's limit, as fitting sees to that."""
        return self.fixed + min(max(0, history_tokens), self.room)


def ordinary_request(
    mode: str,
    main_budget: int,
    *,
    tools: ToolRegistry | None,
    used_tools: Sequence[str] = (),
    instructions: str = "",
) -> OrdinaryRequest:
    """The first call of a request with an empty question: the standing instructions
    (``instructions``, counted first), then for ReAct the system prompt and the tool
    definitions under what they leave of the main budget (all of them, or a finder and the
    tools in use, ``used_tools``); for DAG the planner's request under its own input limit
    (its share of what they leave)."""
    empty = ChatMessage(role="user", content="")
    pinned = instructions_tokens(instructions)
    budget = after_instructions(main_budget, instructions)
    if mode == "dag":
        room = dag_history_budget(budget, query=empty)
        return OrdinaryRequest(
            system=max(0, planner_input_limit(budget) - room),
            instructions=pinned,
            tools=0,
            room=room,
        )
    offer = ToolOffer(tools if tools is not None else ToolRegistry(), budget, used=used_tools)
    first = first_call_tokens(empty, instructions=instructions)
    room = max(0, max(1, main_budget - offer.split.tools) - first)
    return OrdinaryRequest(
        system=max(0, main_budget - room - offer.split.tools - pinned),
        instructions=pinned,
        tools=definition_tokens(offer.definitions() or ()),
        room=room,
        tools_offered=len(offer.names()),
        tools_enabled=len(tools) if tools is not None else 0,
        tools_deferred=offer.deferred,
        tools_share=offer.split.tools,
    )


def check_instructions_room(
    mode: str, main_budget: int, fast_budget: int, *, query: ChatMessage, instructions: str
) -> None:
    """``NoRoomForQuery`` when the standing instructions leave a call of this request no
    room for its question: the main model's first call (ReAct) or the planner's, and for
    DAG each step's on the fast budget. Checked before any call is made."""
    pinned = instructions_tokens(instructions)
    if not pinned:
        return
    question = estimate_message_tokens(query)
    if mode == "dag":
        for budget, prompt in ((main_budget, PLANNER_SYSTEM), (fast_budget, STEP_SYSTEM)):
            system = estimate_message_tokens(ChatMessage(role="system", content=prompt))
            check_room(budget, instructions=pinned, fixed=system + question)
        return
    check_room(main_budget, instructions=pinned, fixed=first_call_tokens(query))
