"""Tool definitions as a tier (RT.3): all of them within their share of the budget; past
it the built-ins, ``find_tools`` and the tools in use, a found tool's definition appended
to the next call, and the messages' budget never paying for definitions."""

from __future__ import annotations

import json

import pytest

from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.tiers import tool_definitions_cap
from fimone.agent import ToolRegistry, default_tools, run_react
from fimone.agent.tools import Tool
from fimone.agent.tools.finder import (
    FINDER_NAME,
    MAX_TOOL_DEFINITIONS,
    ToolOffer,
    definition_tokens,
    rank_tools,
)
from fimone.llm.offline.model import OfflineLLM
from fimone.llm.providers.openai_client import OpenAIChatLLM
from tests.support.fake_llm import FakeLLM
from tests.support.scripted_replies import text, tool_calls

BUDGET = 24_000  # a 32K window's input budget, roughly

VERBS = ["list", "get", "create", "update", "delete", "archive", "export", "count", "assign"]
NOUNS = ["ticket", "invoice", "customer", "order"] + [f"thing{i}" for i in range(30)]


def server_tools(count: int, source: str = "mcp:many") -> list[Tool]:
    """``count`` tools like an MCP server's (``many__archive_ticket``), ~100 tokens each."""

    def operation(name: str):
        async def operate(record_id: str, fields: dict | None = None) -> str:
            return f"{name} done: {record_id}"

        return operate

    pairs = [(v, n) for n in NOUNS for v in VERBS]
    tools = []
    for verb, noun in pairs[:count]:
        name = f"many__{verb}_{noun}"
        tools.append(
            Tool(
                name=name,
                description=f"{verb.capitalize()} a {noun} of the service by its id.",
                parameters={
                    "type": "object",
                    "properties": {
                        "record_id": {"type": "string", "title": "Record Id"},
                        "fields": {"type": "object", "title": "Fields"},
                    },
                    "required": ["record_id"],
                },
                func=operation(name),
                source=source,
            )
        )
    return tools


def registry_with(count: int) -> ToolRegistry:
    tools = default_tools()
    for tool in server_tools(count):
        tools.register(tool)
    return tools


def names_of(definitions) -> list[str]:
    return [d["function"]["name"] for d in definitions or []]


def test_rt3_definitions_within_their_share_are_all_sent_as_they_are():
    tools = registry_with(5)
    offer = ToolOffer(tools, BUDGET)
    assert not offer.deferred
    assert offer.definitions() == tools.openai_tools()
    assert offer.registry is tools


def test_rt3_past_the_share_the_builtins_the_finder_and_the_used_tools_are_sent():
    tools = registry_with(300)
    assert definition_tokens(tools.openai_tools()) > tool_definitions_cap(BUDGET)
    offer = ToolOffer(tools, BUDGET, used=["many__get_ticket", "calculator", "gone"])
    assert offer.deferred
    assert names_of(offer.definitions()) == [
        "calculator",
        "current_time",
        FINDER_NAME,
        "many__get_ticket",
    ]
    assert offer.tokens() <= tool_definitions_cap(BUDGET)
    # The run's registry is left as it was; the offer's runs every tool and the finder.
    assert FINDER_NAME not in tools and FINDER_NAME in offer.registry
    assert len(offer.registry) == len(tools) + 1


async def test_rt3_a_found_tool_is_appended_after_the_definitions_already_sent():
    offer = ToolOffer(registry_with(300), BUDGET)
    before = offer.definitions()
    answer = await offer.registry.run(FINDER_NAME, json.dumps({"query": "archive ticket"}))
    assert answer.splitlines()[1].startswith("- many__archive_ticket: Archive a ticket")
    after = offer.definitions()
    assert after[: len(before)] == before  # the prefix stays: the provider's cache keeps it
    assert "many__archive_ticket" in names_of(after[len(before) :])
    again = await offer.registry.run(FINDER_NAME, json.dumps({"query": "archive ticket"}))
    assert "many__archive_ticket: " in again and "(already available)" in again
    assert offer.definitions() == after


async def test_rt3_a_found_tool_past_the_share_is_given_by_name_and_arguments():
    offer = ToolOffer(registry_with(300), 6_000)
    for noun in NOUNS[4:]:  # fill the share with other tools
        await offer.registry.run(FINDER_NAME, json.dumps({"query": noun}))
    assert offer.tokens() <= max(offer.split.tools, tool_definitions_cap(6_000))
    answer = await offer.registry.run(FINDER_NAME, json.dumps({"query": "delete invoice"}))
    assert "many__delete_invoice" in answer and "call it by name" in answer
    assert '"record_id"' in answer
    assert await offer.registry.run("many__delete_invoice", '{"record_id": "I-1"}') == (
        "many__delete_invoice done: I-1"
    )


async def test_rt3_nothing_found_says_how_to_ask_again():
    offer = ToolOffer(registry_with(300), BUDGET)
    answer = await offer.registry.run(FINDER_NAME, json.dumps({"query": "teleport"}))
    assert answer.startswith("No tool matches 'teleport'")


def test_rt3_the_whole_name_ranks_first_then_name_words_then_descriptions():
    tools = server_tools(300)
    assert rank_tools("many__count_order", tools)[0].name == "many__count_order"
    ranked = [t.name for t in rank_tools("export the invoice", tools)]
    assert ranked[0] == "many__export_invoice"
    assert set(ranked[1:5]) <= {t.name for t in tools if "invoice" in t.name or "export" in t.name}
    assert rank_tools("zzz", tools) == []


async def test_rt3_react_finds_a_tool_and_calls_it_and_the_messages_keep_their_budget(
    build_context,
):
    """A scripted model: find_tools, then the found tool, whose definition arrives with
    the next call; every call's definitions stay within the share, and the guard's budget
    for the messages is the budget less that share."""
    llm = FakeLLM()
    llm.enqueue(
        llm.tool_call(FINDER_NAME, json.dumps({"query": "archive a ticket"})),
        llm.tool_call("many__archive_ticket", json.dumps({"record_id": "T-7"})),
        "Archived.",
    )
    history = [
        ChatMessage(role="user", content="Which ticket was it? " * 40),
        ChatMessage(role="assistant", content="Ticket T-7, the printer one. " * 40),
    ]
    ctx = build_context(llm, main_budget=BUDGET, tools=registry_with(300), history=history)
    outcome = await run_react(ctx)
    assert outcome.answer == "Archived."
    first, second, third = llm.calls
    for call in llm.calls:
        assert definition_tokens(call.tools) <= tool_definitions_cap(BUDGET)
        assert call.messages[1].text() == history[0].text()  # the earlier turn is sent
    assert "many__archive_ticket" not in names_of(first.tools)
    assert second.tools[: len(first.tools)] == first.tools  # appended, not reshuffled
    assert names_of(second.tools)[len(first.tools)] == "many__archive_ticket"
    assert third.messages[-1].content == "many__archive_ticket done: T-7"


async def test_rt3_the_offline_model_finds_the_tool_it_is_asked_to_call(build_context, events):
    llm = OfflineLLM()
    ctx = build_context(
        llm,
        main_budget=BUDGET,
        tools=registry_with(300),
        query='Please call many__archive_ticket {"record_id": "T-7"}',
    )
    outcome = await run_react(ctx)
    calls = [s["name"] for s in events.of("step") if s["kind"] == "tool_call"]
    assert calls == [FINDER_NAME, "many__archive_ticket"]
    shown = outcome.answer.replace("\\_", "_")  # the answer is Markdown
    assert "many__archive_ticket done: T-7" in shown
    assert "Tools found" not in shown


@pytest.mark.parametrize("count", [0, 5, 300])
def test_rt3_the_offer_never_sends_more_than_its_share(count):
    offer = ToolOffer(registry_with(count), BUDGET, used=[t.name for t in server_tools(300)])
    assert offer.tokens() <= max(offer.split.tools, tool_definitions_cap(BUDGET))


async def test_rt3_over_the_openai_sdk_the_found_tool_goes_on_the_wire_next(
    scripted_server, build_context
):
    """Every provider gets the same: the definitions a request carries are the offer's,
    and a found tool's definition is in the next request's ``tools`` (the real SDK
    against the scripted OpenAI-compatible server)."""
    scripted_server.enqueue(
        tool_calls((FINDER_NAME, {"query": "archive ticket"})),
        tool_calls(("many__archive_ticket", {"record_id": "T-7"})),
        text("Archived."),
    )
    llm = OpenAIChatLLM(
        model="scripted", base_url=scripted_server.base_url, api_key="k", max_retries=0
    )
    outcome = await run_react(build_context(llm, main_budget=BUDGET, tools=registry_with(300)))
    assert outcome.answer == "Archived."
    find, act, answer = scripted_server.requests
    for body in (find, act, answer):
        assert definition_tokens(body["tools"]) <= tool_definitions_cap(BUDGET)
    assert "many__archive_ticket" not in names_of(find["tools"])
    assert act["tools"][: len(find["tools"])] == find["tools"]
    assert names_of(act["tools"])[len(find["tools"])] == "many__archive_ticket"
    assert answer["messages"][-1]["content"] == "many__archive_ticket done: T-7"


def test_rt3_more_tools_than_a_request_may_carry_are_found_though_their_tokens_fit():
    """OpenAI refuses more than 128 tools in one request: past that count the finder goes
    too, however large the window."""
    offer = ToolOffer(registry_with(300), 1_000_000, used=[t.name for t in server_tools(300)])
    assert offer.deferred
    assert len(offer.definitions()) == MAX_TOOL_DEFINITIONS
    assert FINDER_NAME in names_of(offer.definitions())
