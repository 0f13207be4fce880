"""Each provider profile end to end: a real daphne, a real websocket, the real ``openai`` SDK
against the scripted server speaking that provider's wire format (tests/support/
provider_profiles.py). A ReAct run with a tool call and a DAG run per profile: the answer is
right, the reasoning arrives apart from it, the usage is the provider's or marked estimated.

The daphne is configured by the environment alone (a local base URL, so the profile starts
generic): what differs is learnt from the endpoint's answers, as for a user's own server.
"""

from __future__ import annotations

import pytest
import websockets

from tests.support.provider_profiles import PROFILES
from tests.support.scripted_server import text, tool_calls
from tests.support.ws_client import Browserless, run_turn, stored_messages, types

pytestmark = pytest.mark.slow

THOUGHT = "The user asks for a product; the calculator gives it exactly. "
FINAL_THOUGHT = "Both results are in; 42 is larger than 40. "
PLAN = (
    '{"steps": [{"id": "s1", "task": "Compute 6*7", "depends_on": []},'
    ' {"id": "s2", "task": "Compute 5*8", "depends_on": []}]}'
)


def answer_text(events: list[dict]) -> str:
    return "".join(e["text"] for e in events if e["type"] == "answer.delta")


def reasoning_text(events: list[dict]) -> str:
    return "".join(e["text"] for e in events if e["type"] == "reasoning.delta")


def check_usage(usage: dict, profile, streamed: bool) -> None:
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    if profile.reasoning_tokens:
        assert usage["reasoning_tokens"] > 0
        assert usage["output_tokens"] > usage["reasoning_tokens"]
    else:
        assert "reasoning_tokens" not in usage
    # The provider's figures, unless a streamed call came back without any.
    no_stream_usage = profile.stream_usage != "on_request"
    assert usage.get("estimated", False) == (no_stream_usage and streamed)


@pytest.mark.parametrize("name", sorted(PROFILES))
async def test_react_and_dag_runs_per_provider_profile(live_daphne_factory, scripted_server, name):
    profile = PROFILES[name]
    scripted_server.use_profile(name)
    server = live_daphne_factory(env=scripted_server.daphne_env(model="scripted-model"))
    client = Browserless(server)
    client.login()
    conversation = client.api("POST", "/api/conversations/", {})
    url = f"{server.ws_url}/ws/chat/{conversation['id']}/"

    scripted_server.enqueue(
        tool_calls(("calculator", {"expression": "17*23"}), reasoning=THOUGHT),
        text("17 × 23 = 391.", reasoning=FINAL_THOUGHT),
    )
    async with websockets.connect(url, additional_headers=client.ws_headers()) as ws:
        react = await run_turn(ws, "What is 17*23?", "react")
        react_requests = len(scripted_server.requests)
        scripted_server.enqueue(
            PLAN,  # planner
            "42",  # step s1
            "40",  # step s2
            '{"achieved": true, "confidence": 0.9, "reason": "both computed"}',  # analyser
            text("6*7 = 42 is larger than 5*8 = 40.", reasoning=FINAL_THOUGHT),  # final answer
        )
        dag = await run_turn(ws, "Which is larger, 6*7 or 5*8?", "dag")

    assert types(react)[-1] == "done", react
    calls = [e for e in react if e["type"] == "step" and e["kind"] == "tool_call"]
    assert [c["name"] for c in calls] == ["calculator"]
    results = [e for e in react if e["type"] == "step" and e["kind"] == "tool_result"]
    assert results[0]["result"] == "391"
    assert answer_text(react) == "17 × 23 = 391."
    if profile.reasoning_field:
        assert reasoning_text(react) == THOUGHT + FINAL_THOUGHT
    else:
        assert reasoning_text(react) == ""
    streamed = any(r.get("stream") for r in scripted_server.requests[:react_requests])
    check_usage(react[-1]["usage"], profile, streamed)

    assert types(dag)[-1] == "done", dag
    plans = [e for e in dag if e["type"] == "dag.plan"]
    assert [s["id"] for s in plans[0]["steps"]] == ["s1", "s2"] and not plans[0]["fallback"]
    assert answer_text(dag) == "6*7 = 42 is larger than 5*8 = 40."
    if profile.reasoning_field:
        assert FINAL_THOUGHT in reasoning_text(dag)
    check_usage(dag[-1]["usage"], profile, streamed=True)  # the final answer is streamed

    # Reasoning is never part of the answer, of what is stored, or of what is sent back.
    stored = stored_messages(server, conversation["id"])
    assert [m["content"] for m in stored if m["role"] == "assistant"] == [
        "17 × 23 = 391.",
        "6*7 = 42 is larger than 5*8 = 40.",
    ]
    for body in scripted_server.requests:
        for message in body["messages"]:
            assert "reasoning_content" not in message and "reasoning" not in message
            assert THOUGHT not in str(message.get("content"))
    if profile.stream_usage == "refused":
        # Refused once, then remembered for as long as the process runs.
        assert sum("stream_options" in body for body in scripted_server.requests) == 1
