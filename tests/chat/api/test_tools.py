"""The tools of a conversation over HTTP: listed by source, a source switched off and on
for one conversation only, the built-in tools never; owner-only."""

from __future__ import annotations

import pytest

from chat.models import Conversation, ToolApproval
from chat.runs.deps import make_tools
from tests.support import approval_tool

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def with_send_note(settings, run_deps):
    """The operator's extra tools hold ``send_note``; no tool server is configured."""
    from fimone.agent.tools.mcp_client import McpToolset

    settings.FIMONE_EXTRA_TOOLS = ["tests.support.approval_tool:approval_tools"]

    async def no_servers(*, vision: bool):
        return McpToolset([], [])

    run_deps.use(server_tools=no_servers)


def url(conversation) -> str:
    return f"/api/conversations/{conversation.pk}/tools/"


def test_the_tools_are_listed_by_source_built_in_first(logged_in_client, conversation):
    ToolApproval.objects.create(conversation=conversation, tool_name="send_note")
    sources = logged_in_client.get(url(conversation)).json()["sources"]
    assert [(s["source"], s["enabled"], s["can_disable"]) for s in sources] == [
        ("builtin", True, False),
        ("test", True, True),
    ]
    assert {t["name"] for t in sources[0]["tools"]} >= {"calculator", "current_time", "recall"}
    (note,) = sources[1]["tools"]
    assert (note["name"], note["needs_approval"], note["approved"]) == ("send_note", True, True)


def test_a_source_switched_off_is_left_out_of_that_conversations_runs_only(
    logged_in_client, conversation, user
):
    other = Conversation.objects.create(owner=user)
    response = logged_in_client.patch(
        url(conversation),
        {"source": approval_tool.SOURCE, "enabled": False},
        content_type="application/json",
    )
    assert response.status_code == 200
    test_source = response.json()["sources"][1]
    assert (test_source["source"], test_source["enabled"]) == ("test", False)
    conversation.refresh_from_db()
    assert conversation.disabled_tool_sources == ["test"]
    off = make_tools(conversation.pk, before_id=0, disabled_sources=["test"])
    assert "send_note" not in off.names() and "calculator" in off.names()
    assert "send_note" in make_tools(other.pk, before_id=0).names()
    assert other.disabled_tool_sources == []

    logged_in_client.patch(
        url(conversation), {"source": "test", "enabled": True}, content_type="application/json"
    )
    conversation.refresh_from_db()
    assert conversation.disabled_tool_sources == []


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"source": "builtin", "enabled": False}, "bad_tool_source"),
        ({"source": "", "enabled": False}, "bad_tool_source"),
        ({"source": 3, "enabled": False}, "bad_tool_source"),
        ({"source": "test", "enabled": "no"}, "invalid_enabled"),
        # Neither is stored by PostgreSQL's jsonb: refused before, not a 500 there (RJ.4).
        ({"source": "mcp:a\x00b", "enabled": False}, "bad_tool_source"),
        ({"tool": "a\ud800", "enabled": False}, "bad_tool_source"),
    ],
)
def test_bad_switches_are_refused_clearly(logged_in_client, conversation, body, code):
    response = logged_in_client.patch(url(conversation), body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == code
    conversation.refresh_from_db()
    assert conversation.disabled_tool_sources == []


def test_someone_elses_conversation_is_not_found(logged_in_client, foreign_conversation):
    assert logged_in_client.get(url(foreign_conversation)).status_code == 404
    response = logged_in_client.patch(
        url(foreign_conversation),
        {"source": "test", "enabled": False},
        content_type="application/json",
    )
    assert response.status_code == 404
    foreign_conversation.refresh_from_db()
    assert foreign_conversation.disabled_tool_sources == []


def test_tool_servers_are_sources_with_a_switch_and_a_failing_one_a_plain_note(
    logged_in_client, conversation, run_deps
):
    from fimone.agent import Tool
    from fimone.agent.tools.mcp_client import McpToolset, ServerProblem

    async def lookup(**arguments):
        return "found"

    served = Tool(
        "docs__search",
        "Search the docs",
        {"type": "object", "properties": {}},
        lookup,
        source="mcp:docs",
    )

    async def server_tools(*, vision: bool):
        return McpToolset([served], [ServerProblem("broken", "it did not start")])

    run_deps.use(server_tools=server_tools)
    sources = {s["source"]: s for s in logged_in_client.get(url(conversation)).json()["sources"]}
    assert [t["name"] for t in sources["mcp:docs"]["tools"]] == ["docs__search"]
    assert (sources["mcp:docs"]["label"], sources["mcp:docs"]["can_disable"]) == ("docs", True)
    assert sources["mcp:broken"]["tools"] == []
    # RU.12: the reason is for staff (admin, log); the menu says plainly it is out.
    assert sources["mcp:broken"]["error"] == "The broken tool server is unavailable right now."
    response = logged_in_client.patch(
        url(conversation), {"source": "mcp:docs", "enabled": False}, content_type="application/json"
    )
    switched = {s["source"]: s for s in response.json()["sources"]}
    assert switched["mcp:docs"]["enabled"] is False


def test_each_tool_has_its_description_and_a_switch_that_takes_it_out_of_the_run(
    logged_in_client, conversation
):
    """RU.12: a built-in tool (here ``recall``) is switched off on its own, for this
    conversation; the run's tools lose it and keep the others."""
    response = logged_in_client.patch(
        url(conversation), {"tool": "recall", "enabled": False}, content_type="application/json"
    )
    assert response.status_code == 200
    builtin = response.json()["sources"][0]
    tools = {t["name"]: t for t in builtin["tools"]}
    assert tools["recall"]["enabled"] is False and tools["calculator"]["enabled"] is True
    assert all(t["description"] for t in builtin["tools"])
    conversation.refresh_from_db()
    assert conversation.disabled_tool_sources == ["tool:recall"]
    run_tools = make_tools(
        conversation.pk, before_id=0, disabled_sources=conversation.disabled_tool_sources
    )
    assert "recall" not in run_tools and "calculator" in run_tools
    assert "send_note" in run_tools

    logged_in_client.patch(
        url(conversation), {"tool": "recall", "enabled": True}, content_type="application/json"
    )
    conversation.refresh_from_db()
    assert conversation.disabled_tool_sources == []


def test_a_tool_switch_without_a_name_is_refused(logged_in_client, conversation):
    response = logged_in_client.patch(
        url(conversation), {"tool": "", "enabled": False}, content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_tool_source"
