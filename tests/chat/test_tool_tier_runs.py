"""Tool definitions as a budgeted tier through the real run path (RT.3): a real MCP server
(the SDK's own, over stdio) listing 300 tools, a 32K window, a scripted model. Every
request's definitions stay within a quarter of the budget, the earlier turns are still
sent, and the model reaches the tool it needs through ``find_tools``."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from contextmgmt.budget import resolve_budget
from contextmgmt.core.tiers import tool_definitions_cap
from fimone.agent.tools.finder import FINDER_NAME, definition_tokens
from tests.chat.tool_servers.test_runs import mcp_file, server_entry  # noqa: F401 - fixture
from tests.support.runs import events_until, of_type, send

pytestmark = [
    pytest.mark.slow,  # a real MCP server process
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs"),
]

SERVER_TOOLS = 300
FIRST_QUESTION = "My printer ticket is T-7: the printer on floor 3 jams on every page."
FIRST_ANSWER = "Noted: ticket T-7, the floor 3 printer that jams."


@pytest.fixture
def window_of_32k(settings) -> int:
    """A 32K window for the runs and the gauge: its usable input budget."""
    settings.LLM_CONTEXT_SIZE = 32_768
    settings.LLM_MAX_OUTPUT_TOKENS = 4_096
    return resolve_budget("main").usable_input_tokens


@pytest.fixture
def server_of_300_tools(mcp_file, marker_dir, settings):  # noqa: F811 - the imported fixture
    """The operator raised the per-server cap (FIMONE_MCP_MAX_TOOLS): all 300 are offered."""
    settings.FIMONE_MCP_MAX_TOOLS = 1_000
    entry = server_entry(marker_dir)
    entry["args"] = [*entry["args"], "--service-tools", str(SERVER_TOOLS)]
    mcp_file({"many": entry})


def names(tools) -> list[str]:
    return [t["function"]["name"] for t in tools or []]


async def turn(socket, content: str) -> list[dict]:
    await send(socket, type="message", content=content, mode="react")
    events = await events_until(socket, "done", "error")
    assert events[-1]["type"] == "done", events[-1]
    return events


@pytest.mark.usefixtures("server_of_300_tools")
async def test_rt3_300_tools_at_32k_definitions_within_a_quarter_history_kept_tool_found(
    user, socket, conversation, ws_fake_llm, window_of_32k
):
    share = tool_definitions_cap(window_of_32k)
    assert window_of_32k * 0.25 >= share

    ws_fake_llm.enqueue(FIRST_ANSWER)
    await turn(socket, FIRST_QUESTION)
    first_turn_calls = len(ws_fake_llm.calls)

    ws_fake_llm.enqueue(
        ws_fake_llm.tool_call(FINDER_NAME, json.dumps({"query": "archive a support ticket"})),
        ws_fake_llm.tool_call("many__archive_ticket", json.dumps({"record_id": "T-7"})),
        "Ticket T-7 is archived.",
    )
    events = await turn(socket, "Please archive that ticket.")
    find, act, answer = ws_fake_llm.calls[first_turn_calls:]

    for call in ws_fake_llm.calls:
        assert definition_tokens(call.tools) <= share
    for call in (find, act, answer):
        sent = [m.text() for m in call.messages]
        assert FIRST_QUESTION in sent and FIRST_ANSWER in sent  # the earlier turn is sent
    # The server's 300 tools were listed, but only the finder and the built-ins go first.
    assert FINDER_NAME in names(find.tools)
    assert "many__archive_ticket" not in names(find.tools)
    assert len(find.tools) < 10
    # The found tool joins the next request, appended after the definitions sent before.
    assert act.tools[: len(find.tools)] == find.tools
    assert "many__archive_ticket" in names(act.tools)[len(find.tools) :]
    results = [s for s in of_type(events, "step") if s["kind"] == "tool_result"]
    assert [s["name"] for s in results] == [FINDER_NAME, "many__archive_ticket"]
    assert results[1]["result"].startswith("archive_ticket done: T-7")
    # The answer's usage says what the definitions cost it (the usage card shows it).
    usage = events[-1]["usage"]
    assert usage["tool_definition_tokens"] == sum(
        definition_tokens(c.tools) for c in (find, act, answer)
    )

    # The next turn sends the tool this conversation used from its first call on.
    ws_fake_llm.enqueue("Done already.")
    await turn(socket, "Is it archived?")
    assert "many__archive_ticket" in names(ws_fake_llm.calls[-1].tools)

    # The gauge shows the tool tier apart: what is sent, of how many tools.
    client = Client()
    await sync_to_async(client.force_login)(user)
    gauge = (
        await sync_to_async(client.get)(f"/api/conversations/{conversation.id}/context/")
    ).json()
    assert gauge["tools"]["deferred"] is True
    assert gauge["tools"]["enabled"] >= SERVER_TOOLS
    assert 0 < gauge["tiers"]["tools"] <= share
    assert gauge["tiers"]["tools"] == definition_tokens(ws_fake_llm.calls[-1].tools)
    tiers = gauge["tiers"]
    assert gauge["used_tokens"] == sum(tiers.values())
