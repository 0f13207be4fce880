"""ReAct and DAG through the real openai SDK against the scripted server (RR.2, RD.3).

What goes on the wire: tools on tool iterations, none on the streamed answer, the overflow
retry after a provider's context-length error, no fimone field (pinned, metadata) in a body.
"""

from __future__ import annotations

import json

import pytest

from contextmgmt.core.messages import ChatMessage
from fimone.agent import run_dag, run_react
from fimone.llm.providers.openai_client import OpenAIChatLLM
from fimone.llm.providers.wire import INVALID_ARGUMENTS_KEY
from tests.support.scripted_server import context_overflow, text, tool_calls


@pytest.fixture
def sdk_llm(scripted_server):
    return OpenAIChatLLM(
        model="scripted", base_url=scripted_server.base_url, api_key="k", max_retries=0
    )


def history_of(pairs: int) -> list[ChatMessage]:
    history = []
    for i in range(pairs):
        history.append(ChatMessage(role="user", content=f"question {i} " * 60))
        history.append(ChatMessage(role="assistant", content=f"answer {i} " * 60))
    return history


async def test_react_tool_loop_overflow_retry_and_stream_over_http(
    scripted_server, sdk_llm, build_context, events
):
    scripted_server.enqueue(
        tool_calls(("calculator", {"expression": "6*7"}), usage=(100, 10)),
        context_overflow(),
        text("", usage=(50, 0)),
        text("Six times seven is 42.", usage=(80, 7)),
    )
    ctx = build_context(sdk_llm, history=history_of(12))
    outcome = await run_react(ctx)

    first, refused, retried, streamed = scripted_server.requests
    assert first["tools"] and [t["function"]["name"] for t in first["tools"]] == [
        "calculator",
        "current_time",
    ]
    assert len(retried["messages"]) < len(refused["messages"])
    # The OpenAI schema of a tool message exactly: no "name", no fimone field.
    assert retried["messages"][-1] == {
        "role": "tool",
        "content": "42",
        "tool_call_id": "call_0_calculator",
    }
    assert streamed.get("stream") is True and not streamed.get("tools")
    for body in scripted_server.requests:
        for message in body["messages"]:
            assert set(message) <= {"role", "content", "name", "tool_call_id", "tool_calls"}
    assert outcome.answer == "Six times seven is 42."
    assert events.answer_text() == outcome.answer
    assert events.of("compact")[0]["scope"] == "iteration"
    assert outcome.usage.input_tokens == 100 + 50 + 80


async def test_dag_over_http(scripted_server, sdk_llm, build_context, events):
    plan = {"steps": [{"id": "s1", "task": "compute", "depends_on": []}]}
    verdict = {"achieved": True, "confidence": 0.9, "reason": "ok"}
    scripted_server.enqueue(
        text(json.dumps(plan)), text("s1 says 42"), text(json.dumps(verdict)), text("It is 42.")
    )
    outcome = await run_dag(build_context(sdk_llm))

    planner, step, analyser, final = scripted_server.requests
    assert len(planner["messages"]) == 2 and "JSON plan" in planner["messages"][0]["content"]
    assert step["tools"] and step["messages"][-1]["content"] == "Your task: compute"
    assert "JSON verdict" in analyser["messages"][0]["content"]
    assert final.get("stream") is True
    assert outcome.answer == "It is 42." == events.answer_text()


async def test_react_hands_malformed_tool_arguments_back_to_the_model_over_http(
    scripted_server, sdk_llm, build_context, events
):
    """Issue 9: a provider's malformed tool-call JSON is answered as a tool result the model
    reads and corrects (as with an in-process model), not an error that ends the run (RR)."""
    scripted_server.enqueue(
        tool_calls(("calculator", '{"expression": "6*7'), usage=(100, 10)),
        tool_calls(("calculator", {"expression": "6*7"}), usage=(120, 10)),
        text("Six times seven is 42.", usage=(140, 7)),
    )
    outcome = await run_react(build_context(sdk_llm))

    _, correction, answer = scripted_server.requests
    echoed_call, tool_result = correction["messages"][-2:]
    assert json.loads(echoed_call["tool_calls"][0]["function"]["arguments"]) == {
        INVALID_ARGUMENTS_KEY: '{"expression": "6*7'
    }
    assert tool_result["role"] == "tool" and "not valid JSON" in tool_result["content"]
    assert answer["messages"][-1] == {
        "role": "tool",
        "content": "42",
        "tool_call_id": "call_0_calculator",
    }
    assert outcome.status == "done" and outcome.answer == "Six times seven is 42."
    results = [p["result"] for p in events.of("step") if p["kind"] == "tool_result"]
    assert "not valid JSON" in results[0] and results[1] == "42"
