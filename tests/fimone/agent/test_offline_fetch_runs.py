"""The offline model reads a page through the real ``fetch_url`` in ReAct and DAG runs
(the page server is on loopback, allowed as an operator would)."""

from __future__ import annotations

import pytest

from fimone.agent import default_tools, run_dag, run_react
from fimone.agent.tools.netpolicy import AddressPolicy
from fimone.agent.tools.web import FetchConfig, fetch_url_tool
from fimone.llm.offline.model import OfflineLLM
from tests.support.web_server import ARTICLE_FACT, BOILERPLATE_MARKERS, serve_pages


@pytest.fixture(scope="module")
def site():
    with serve_pages() as server:
        yield server


@pytest.fixture
def fetching_context(build_context):
    def build(query: str):
        tools = default_tools()
        config = FetchConfig(policy=AddressPolicy.from_entries(["127.0.0.1"]))
        tools.register(fetch_url_tool(config))
        llm = OfflineLLM()
        return build_context(llm, fast_llm=llm, compact_llm=llm, tools=tools, query=query)

    return build


async def test_react_fetches_and_quotes_the_page(fetching_context, events, site):
    outcome = await run_react(fetching_context(f"fetch {site.url('/article')}"))
    assert outcome.status == "done"
    assert [(p["kind"], p["name"]) for p in events.of("step")] == [
        ("tool_call", "fetch_url"),
        ("tool_result", "fetch_url"),
    ]
    assert ARTICLE_FACT in events.of("step")[1]["result"]
    assert outcome.answer.startswith(f"From the page `{site.url('/article')}` (The Tern Report):")
    assert ARTICLE_FACT in outcome.answer
    for marker in BOILERPLATE_MARKERS:
        assert marker not in outcome.answer


async def test_dag_fetches_in_a_step_and_answers_from_it(fetching_context, events, site):
    query = f"Read {site.url('/article')} and tell me the lighthouse code word"
    outcome = await run_dag(fetching_context(query))
    assert outcome.status == "done"
    called = [p["name"] for p in events.of("step") if p["kind"] == "tool_call"]
    assert called == ["fetch_url"]
    assert ARTICLE_FACT in outcome.answer
