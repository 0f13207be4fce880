"""Each provider profile end to end: a real daphne, a real websocket, the real ``openai`` SDK
against the scripted server speaking that provider's wire format (tests/support/
provider_profiles.py). A ReAct run with a tool call and a DAG run per profile: the answer is
right, the reasoning arrives apart from it, the usage is the provider's or marked estimated.

Every profile is an endpoint of its own (``ScriptedServer.profile_base_url``), so what the
client learns starts empty for each, on one daphne shared by the module: the active main
model is a row added for the profile (a local base URL, so the profile starts generic and is
detected automatically; the shell that switches it and the daphne share a Redis, so the
switch reaches the next run as with several server processes).
The fast role follows the main one, as with no fast model configured. One profile
(``ENV_CONFIGURED``) is the daphne's environment endpoint instead, with no row active: the
only test on that endpoint, so what the process remembers for it starts empty too. What
differs is learnt from the endpoint's answers, as for a user's own server. Except for
DeepSeek's old rule, which only bites a client that follows today's (a row set to the
``deepseek`` profile, as api.deepseek.com is detected): there the refusal of the reasoning
sent back is learnt.

Inline ``<think>`` tags (a server without a reasoning parser) are split out of the streamed
content: shown as thinking, never stored or sent back as the answer. A model that may not
stream (OpenAI's unverified organisations, directly or through OpenRouter) is asked whole
after one refusal, and the socket says the answer arrives at once (``llm.notice``). A
gateway refusing ``stream_options`` without naming it has its suspects tried in order.

DeepSeek's thinking mode (the ``deepseek`` fake) needs a tool-calling step's reasoning back
within the turn: the ReAct turn's second call carries it, the next turn's calls do not.
"""

from __future__ import annotations

import pytest
import websockets

from tests.support.provider_profiles import PROFILES
from tests.support.scripted_server import text, tool_calls
from tests.support.ws_client import run_turn, stored_messages, types

# One worker, one daphne: the tests switch its active model in turn.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("provider-profiles")]

# The client's starting profile where it is not the generic one a local base URL gives.
CLIENT_PROFILE = {"deepseek_legacy": "deepseek"}
# The profile the daphne's environment names as its endpoint (its tests' rows all inactive).
ENV_CONFIGURED = "gateway_no_stream_usage"
# The model's name where it matters: QwQ's chat template opens the think block in the prompt.
MODEL = {"qwq_closing_only": "Qwen/QwQ-32B"}

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
    no_stream_usage = profile.stream_usage != "on_request" or profile.refuses_stream_options_unnamed
    assert usage.get("estimated", False) == (no_stream_usage and streamed)


# Runs against the daphne's database (``manage_shell``), a process of its own whose saves
# reach the daphne's next run through the Redis they share: the profile's endpoint becomes
# the active main model, the profile detected from its base URL and model as the admin does,
# or set as named; or no row is active and the environment's endpoint answers.
ACTIVATE = """
from contextmgmt import profiles
from contextmgmt.core.providers import PROFILES
from contextmgmt.models import ModelConfig
for active in ModelConfig.objects.filter(is_active=True):
    active.is_active = False
    active.save(update_fields=["is_active"])
name, base_url, model, client_profile = {args!r}
if base_url:
    row = ModelConfig(name=name, model=model, role="main", base_url=base_url, is_active=True)
    if client_profile:
        profiles.set_profile(row, PROFILES[client_profile])
        row.profile_auto = False
    else:
        profiles.detect_profile(row)
    row.save()
print("ACTIVE", list(ModelConfig.objects.filter(is_active=True).values_list("name", flat=True)))
"""


def profile_server(shared_daphne_factory, scripted_server, redis_server, name: str):
    """The module's daphne with ``name``'s endpoint as its main (and so fast) model."""
    model = MODEL.get(name, "scripted-model")
    env = scripted_server.daphne_env(model="scripted-model", REDIS_URL=redis_server.url)
    server = shared_daphne_factory(env, group=__name__)
    if name == ENV_CONFIGURED:
        scripted_server.use_profile(name)
        args = (name, "", model, "")
    else:
        args = (name, scripted_server.profile_base_url(name), model, CLIENT_PROFILE.get(name, ""))
    out = server.manage_shell(ACTIVATE.format(args=args))
    assert out.strip().splitlines()[-1] == f"ACTIVE {[] if name == ENV_CONFIGURED else [name]}"
    return server


@pytest.mark.parametrize("name", sorted(PROFILES))
async def test_react_and_dag_runs_per_provider_profile(
    shared_daphne_factory, scripted_server, redis_server, name
):
    profile = PROFILES[name]
    server = profile_server(shared_daphne_factory, scripted_server, redis_server, name)
    conversation = server.api("POST", "/api/conversations/", {})
    url = f"{server.ws_url}/ws/chat/{conversation['id']}/"

    scripted_server.enqueue(
        tool_calls(("calculator", {"expression": "17*23"}), reasoning=THOUGHT),
        text("17 × 23 = 391.", reasoning=FINAL_THOUGHT),
    )
    async with websockets.connect(url, additional_headers=server.ws_headers()) as ws:
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
    if profile.shows_reasoning:
        assert reasoning_text(react) == THOUGHT + FINAL_THOUGHT
    else:
        assert reasoning_text(react) == ""
    streamed = any(r.get("stream") for r in scripted_server.requests[:react_requests])
    check_usage(react[-1]["usage"], profile, streamed)

    assert types(dag)[-1] == "done", dag
    plans = [e for e in dag if e["type"] == "dag.plan"]
    assert [s["id"] for s in plans[0]["steps"]] == ["s1", "s2"] and not plans[0]["fallback"]
    assert answer_text(dag) == "6*7 = 42 is larger than 5*8 = 40."
    if profile.shows_reasoning:
        assert FINAL_THOUGHT in reasoning_text(dag)
    check_usage(dag[-1]["usage"], profile, streamed=True)  # the final answer is streamed

    # Reasoning is never part of the answer, of what is stored, or of what is sent back.
    stored = stored_messages(server, conversation["id"])
    assert [m["content"] for m in stored if m["role"] == "assistant"] == [
        "17 × 23 = 391.",
        "6*7 = 42 is larger than 5*8 = 40.",
    ]
    requests = scripted_server.requests
    # Every call went to this profile's endpoint, none to another test's.
    prefix = "/v1/" if name == ENV_CONFIGURED else f"/p/{name}/v1/"
    assert all(path.startswith(prefix) for path in scripted_server.request_paths)
    for body in requests:
        for message in body["messages"]:
            assert "reasoning" not in message
            assert THOUGHT not in str(message.get("content"))
            assert FINAL_THOUGHT not in str(message.get("content"))
            assert "think>" not in str(message.get("content"))
    # Only a tool-calling step's reasoning goes back, only within its turn, only where the
    # provider wants it (DeepSeek's thinking mode: refused once by the generic profile).
    answered = requests[react_requests - 1]  # the call that wrote the answer
    step = [m for m in answered["messages"] if m.get("tool_calls")]
    assert len(step) == 1
    if profile.requires_reasoning_echo:
        assert step[0]["reasoning_content"] == THOUGHT
    else:
        assert "reasoning_content" not in step[0]
    for body in requests[react_requests:]:  # the next turn: no step's reasoning, anywhere
        assert all("reasoning_content" not in m for m in body["messages"])
    after_tool = [
        b for b in requests[:react_requests] if any(m.get("tool_calls") for m in b["messages"])
    ]
    if profile.requires_reasoning_echo or name in CLIENT_PROFILE:
        # Sent as the profile said, refused once, then as the endpoint wants.
        assert len(after_tool) == 2
    else:
        assert len(after_tool) == 1
    if profile.refuses_stream:
        # Refused once, then every call asked whole; the user is told the answer comes at once.
        assert [bool(b.get("stream")) for b in requests].count(True) == 1
        for events in (react, dag):
            notices = [e for e in events if e["type"] == "llm.notice"]
            assert notices and {n["kind"] for n in notices} == {"unstreamed"}
    if profile.refuses_stream_options_unnamed:
        # Named nothing: the first suspect, stream_options, was left out and learnt.
        assert sum("stream_options" in b for b in requests) == 1
        assert react[-1]["usage"].get("estimated") is True
    if profile.stream_usage == "refused":
        # Refused once, then remembered for as long as the process runs.
        assert sum("stream_options" in body for body in scripted_server.requests) == 1
