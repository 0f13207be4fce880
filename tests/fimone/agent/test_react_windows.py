"""A ReAct run reading long pages from a real MCP server (the SDK's own, over stdio) at a
window local models have: the context fits by stubs and cuts, not by summaries (RT.1)."""

from __future__ import annotations

import json

import pytest

from contextmgmt.core.budget import usable_input_tokens
from contextmgmt.core.masking import CUT_KEY, is_masked, unanswered_round
from contextmgmt.core.messages import ChatMessage, ToolCall
from contextmgmt.core.readon import read_on_lines
from fimone.agent import default_tools, run_react
from tests.support.fake_llm import FakeLLM
from tests.support.mcp_servers import stdio_spec

pytestmark = pytest.mark.slow  # a real MCP server, a process of its own

STEPS = 6
PAGE_CHARS = 30_000


def serial(message: ChatMessage) -> str:
    return json.dumps(message.to_openai(), sort_keys=True, ensure_ascii=False)


def compaction_point(messages: list[ChatMessage]) -> int:
    """How many leading messages compaction has settled: up to the last stub or summary
    (as bench/tool_heavy.py measures prefix stability)."""
    return max((i + 1 for i, m in enumerate(messages) if is_masked(m) or m.is_summary), default=0)


def prefix_stability(requests: list[list[ChatMessage]]) -> float:
    """The share of calls after the first that send the previous call's prefix up to its
    compaction point byte for byte."""
    stable = 0
    for previous, current in zip(requests, requests[1:], strict=False):
        point = compaction_point(previous)
        stable += len(current) >= point and all(
            serial(a) == serial(b) for a, b in zip(previous[:point], current[:point], strict=True)
        )
    return stable / (len(requests) - 1)


def two_pages(step: int) -> ChatMessage:
    calls = [
        ToolCall(f"s{step}_{k}", "docs__page", json.dumps({"number": 2 * step + k})) for k in (0, 1)
    ]
    return ChatMessage(role="assistant", content=None, tool_calls=calls)


async def run_pages(build_context, mcp_pool, marker_dir, window: int, output: int):
    """Six steps of two ~30,000-character pages each, then the answer, at ``window``."""
    tools = default_tools()
    toolset = await mcp_pool.toolset([stdio_spec(marker_dir, name="docs")], vision=False)
    for tool in toolset.tools:
        tools.register(tool)
    model = FakeLLM(model_name="local-32k")
    model.enqueue(*(two_pages(step) for step in range(STEPS)), "All twelve pages read.")
    summariser = FakeLLM(default="Pages were read; readings noted.")
    budget = usable_input_tokens(window, output)
    ctx = build_context(
        model,
        compact_llm=summariser,
        main_budget=budget,
        fast_budget=budget,
        tools=tools,
        query="Read pages 0 to 11 of the report and list every reading.",
    )
    outcome = await run_react(ctx)
    return outcome, model, summariser, budget


async def test_a_32k_window_reads_twelve_long_pages_with_at_most_one_summary_rt_1(
    build_context, mcp_pool, marker_dir, events
):
    """The issue's run: a 32,000-token window, an MCP tool returning two ~30,000-character
    pages a step for six steps. The newest two rounds alone exceed the budget; results the
    model has read become stubs before any summary (at most one summariser call in the
    run), the page it has not read yet stays whole, and each call keeps the previous
    call's prefix up to its last stub (stability at least 0.9)."""
    outcome, model, summariser, budget = await run_pages(
        build_context, mcp_pool, marker_dir, window=32_000, output=4_096
    )
    assert outcome.status == "done" and outcome.answer == "All twelve pages read."
    requests = [call.messages for call in model.calls]
    assert len(requests) == STEPS + 1
    results = [p for p in events.of("step") if p["kind"] == "tool_result"]
    assert len(results) == 2 * STEPS and all("Reading" in p["result"] for p in results)
    assert len(summariser.calls) <= 1
    for k, sent in enumerate(requests[1:], 1):
        unread = unanswered_round(sent)
        read = [m for m in sent[:unread] if m.role == "tool"]
        # Every result the model has acted on is a stub, the newest step's pages are whole.
        assert len(read) == 2 * (k - 1) and all(is_masked(m) for m in read), k
        newest = [m for m in sent[unread:] if m.role == "tool"]
        assert [len(m.text()) for m in newest] == [PAGE_CHARS, PAGE_CHARS]
    assert prefix_stability(requests) >= 0.9
    assert not [c for c in outcome.compactions if c["strategy"] == "llm"]


async def test_an_8k_window_cuts_an_unread_page_with_a_line_to_read_on_rt_1(
    build_context, mcp_pool, marker_dir
):
    """At an 8,000-token window one page does not fit: the unread pages are cut, each
    ending with how to read on from where it stops, and nothing unread is summarised."""
    outcome, model, summariser, _ = await run_pages(
        build_context, mcp_pool, marker_dir, window=8_000, output=2_000
    )
    assert outcome.status == "done"
    assert summariser.calls == []
    second = model.calls[1].messages
    pages = [m for m in second if m.role == "tool"]
    for page in pages:
        cut = page.metadata[CUT_KEY]
        (line,) = read_on_lines(page.text())
        assert cut["chars"] == PAGE_CHARS and 0 < cut["shown"] < PAGE_CHARS
        assert line.endswith(
            f'read on with recall(id="{page.tool_call_id}", start={cut["shown"]})]'
        )
    (first_cut, *_) = [c for c in outcome.compactions if c.get("results_cut")]
    assert [c["call_id"] for c in first_cut["results_cut"]] == ["s0_0", "s0_1"]
    assert all(
        c["chars"] == PAGE_CHARS and c["shown"] < PAGE_CHARS for c in first_cut["results_cut"]
    )
    later = model.calls[2].messages
    stubs = [m for m in later if m.role == "tool" and is_masked(m)]
    # The stub of a cut page says where reading stopped, with the same line.
    assert [read_on_lines(m.text()) for m in stubs] == [read_on_lines(p.text()) for p in pages]
