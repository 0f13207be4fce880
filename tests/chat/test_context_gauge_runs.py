"""The context gauge against what runs really send (chat/pages.py): real websocket runs
on a scripted LLM, a conversation long enough to be summarised, and the gauge read after
each run."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from chat.runs.deps import make_tools
from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.prompts import hint_of
from contextmgmt.core.tokens import estimate_message_tokens, estimate_messages_tokens
from fimone.agent.react import tool_schema_tokens
from tests.support.runs import connect, events_until, of_type, send

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]

BUDGET = 4_000
LONG_ANSWER = "Answer: " + "lorem ipsum dolor " * 300  # about 1,000 tokens


@pytest.fixture
def budget_of_4000(settings) -> int:
    # 12,000 context - 4,000 output - 4,000 reserve (env source), for the runs and the gauge.
    settings.LLM_CONTEXT_SIZE = 12_000
    settings.LLM_MAX_OUTPUT_TOKENS = 4_000
    return BUDGET


def summary_or_long_answer(messages: list[ChatMessage]) -> str:
    if hint_of(messages[0].text()):
        return "[Conversation summary] The user asked questions 0 to 9; numbers 12345."
    return LONG_ANSWER


def sent_tokens(call) -> int:
    """What one model call sent, as the run counts it: its messages and tool schemas."""
    tools = make_tools(None, before_id=0) if call.tools else None
    return estimate_messages_tokens(call.messages) + tool_schema_tokens(tools)


async def test_the_gauge_of_a_summarised_conversation_never_passes_the_budget_it_fits(
    user, conversation, ws_fake_llm, budget_of_4000
):
    """Turns of about 1,300 tokens: from the third run on, every request summarises. The
    gauge shows what the next request sends before its question — the history fitted to
    its room, the system prompt and the tool schemas — so it stays within the budget, and
    each run's first call sends exactly that plus its question."""
    client = Client()
    await sync_to_async(client.force_login)(user)
    url = f"/api/conversations/{conversation.id}/context/"
    ws_fake_llm.default = summary_or_long_answer
    socket = await connect(user, conversation.id)
    gauge = (await sync_to_async(client.get)(url)).json()
    seen = []
    try:
        for i in range(5):
            query = f"Question {i}: " + "why is that so " * 60
            before = len(ws_fake_llm.calls)
            await send(socket, type="message", content=query)
            events = await events_until(socket, "done", "error")
            assert events[-1]["type"] == "done", events[-1]
            first = next(c for c in ws_fake_llm.calls[before:] if not hint_of(c.messages[0].text()))
            question = estimate_message_tokens(ChatMessage(role="user", content=query))
            empty = estimate_message_tokens(ChatMessage(role="user", content=""))
            expected = gauge["used_tokens"] + question - empty
            if gauge["will_compact"]:
                assert of_type(events, "compact"), "the gauge said the history would be fitted"
                assert sent_tokens(first) <= expected
            else:
                assert sent_tokens(first) == expected
            gauge = (await sync_to_async(client.get)(url)).json()
            seen.append(gauge)
    finally:
        await socket.disconnect()

    summarised = [g for g in seen if g["summarised"]]
    assert len(summarised) >= 2
    for g in seen:
        assert g["used_tokens"] <= g["budget"]["effective_input_tokens"] == BUDGET
    # As stored, the summarised history is larger than its room: the next request fits it,
    # and the gauge is full rather than past full.
    assert any(g["history_tokens"] > g["history_room_tokens"] for g in summarised)
    assert all(g["used_tokens"] == BUDGET for g in summarised if g["will_compact"])
