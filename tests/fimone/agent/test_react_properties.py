"""Properties of the ReAct engine over random tool runs (RR.3, R3.1, R3.2, DESIGN §2 rules).

Whatever the tools return and however small the budget, every request the engine sends:
fits the budget, carries the current query pinned, has no tool result without its call and
no call without its result, and no message over the guard's size cap.
"""

from __future__ import annotations

import asyncio
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextmgmt.core.messages import ChatMessage, ToolCall
from contextmgmt.core.tokens import estimate_messages_tokens
from fimone.agent import AgentContext, InjectionQueue, Tool, ToolRegistry, run_react
from tests.support.fake_llm import FakeLLM

QUERY = "Inspect the dumps and report the largest one."


async def dump(size: int) -> str:
    return "x" * size


DUMP = Tool(
    "dump",
    "returns size characters",
    {"type": "object", "properties": {"size": {"type": "integer"}}, "required": ["size"]},
    dump,
)


def script(rounds: list[list[int]]) -> list[ChatMessage]:
    replies = []
    for r, sizes in enumerate(rounds):
        calls = [
            ToolCall(id=f"c{r}_{i}", name="dump", arguments=json.dumps({"size": size}))
            for i, size in enumerate(sizes)
        ]
        replies.append(ChatMessage(role="assistant", content=None, tool_calls=calls))
    replies.append(ChatMessage(role="assistant", content="The largest dump is done."))
    return replies


def check_request(messages: list[ChatMessage], budget: int) -> None:
    assert estimate_messages_tokens(messages) <= budget
    current = [m for m in messages if m.pinned and not m.injected]
    assert [m.content for m in current] == [QUERY]
    called: set[str] = set()
    answered: set[str] = set()
    for m in messages:
        if m.role == "assistant" and m.tool_calls:
            called |= {tc.id for tc in m.tool_calls}
        if m.role == "tool":
            assert m.tool_call_id in called  # never a result without its call
            answered.add(m.tool_call_id)
        assert len(m.text()) <= 50_000 + len("\n[Truncated]")
    assert called == answered  # never a call without its result


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    rounds=st.lists(
        st.lists(st.integers(0, 80_000), min_size=1, max_size=3), min_size=0, max_size=5
    ),
    history_pairs=st.integers(0, 15),
    budget=st.sampled_from([1_500, 4_000, 20_000]),
    with_compactor=st.booleans(),
)
def test_every_request_is_well_formed(rounds, history_pairs, budget, with_compactor):
    history = []
    for i in range(history_pairs):
        history.append(ChatMessage(role="user", content=f"earlier question {i} " * 20))
        history.append(ChatMessage(role="assistant", content=f"earlier answer {i} " * 20))
    llm = FakeLLM().enqueue(*script(rounds))
    compactor = FakeLLM(default="Summary: dumps were inspected.") if with_compactor else None

    async def sink(event: str, payload: dict) -> None:
        pass

    ctx = AgentContext(
        llm=llm,
        fast_llm=llm,
        compact_llm=compactor,
        main_budget=budget,
        fast_budget=budget,
        history=history,
        query=ChatMessage(role="user", content=QUERY),
        sink=sink,
        injections=InjectionQueue(),
        tools=ToolRegistry([DUMP]),
        max_iterations=8,
    )
    outcome = asyncio.run(run_react(ctx))

    assert outcome.answer == "The largest dump is done."
    assert len(llm.calls) == len(rounds) + 1
    for call in llm.calls:
        check_request(call.messages, budget)
