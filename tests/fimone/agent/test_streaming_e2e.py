"""Every ReAct iteration and DAG step streams, through the real openai SDK against the
scripted server (RS.1, RS.4): text goes out as it arrives, pre-tool text moves into the step,
the answer is asked once, and a stream that breaks off is an error with its text kept."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from contextmgmt.core.llm import LLMUnavailable, StreamCutOff
from fimone.agent import run_dag, run_react
from fimone.llm.providers.openai_client import OpenAIChatLLM
from tests.support.scripted_server import cut_off, held, stream_error, text, tool_calls


@pytest.fixture
async def sdk_llm(scripted_server):
    llm = OpenAIChatLLM(model="scripted", base_url=scripted_server.base_url, api_key="k")
    llm.max_retries = 0
    yield llm
    await llm.aclose()


async def test_a_react_run_streams_pre_tool_text_into_the_step_and_the_answer_once(
    scripted_server, sdk_llm, build_context, events
):
    scripted_server.enqueue(
        tool_calls(("calculator", {"expression": "6*7"}), content="Let me compute that. "),
        text("Six times seven is 42."),
    )
    outcome = await run_react(build_context(sdk_llm))
    assert len(scripted_server.requests) == 2  # one call per iteration, no replay
    assert all(r["stream"] is True and r["tools"] for r in scripted_server.requests)
    names = events.names()
    retract = names.index("answer.retract")
    assert names[:retract].count("answer.delta") == len("Let me compute that. ".split())
    assert events.of("answer.retract") == [
        {"iteration": 1, "chars": len("Let me compute that. "), "text": "Let me compute that."}
    ]
    assert events.answer_text() == outcome.answer == "Six times seven is 42."


async def test_the_first_delta_reaches_the_sink_while_the_provider_holds_its_stream(
    scripted_server, sdk_llm, build_context, events
):
    release = threading.Event()
    scripted_server.enqueue(held(text("one two three four"), release))
    first_delta = asyncio.Event()

    async def sink(name: str, payload: dict) -> None:
        await events(name, payload)
        if name == "answer.delta":
            first_delta.set()

    run = asyncio.create_task(run_react(build_context(sdk_llm, sink=sink)))
    async with asyncio.timeout(10):  # a fail-safe: the hold keeps the run waiting
        await first_delta.wait()
    assert events.answer_text() == "one " and not run.done()
    release.set()
    outcome = await asyncio.wait_for(run, timeout=10)
    assert outcome.answer == "one two three four"


@pytest.mark.parametrize(
    ("fault", "error"),
    [(cut_off("The answer is"), StreamCutOff), (stream_error("Boom.", "The answer is"), None)],
    ids=["cut_off", "error_mid_stream"],
)
async def test_a_broken_stream_is_an_error_after_its_text_went_out(
    scripted_server, sdk_llm, build_context, events, fault, error
):
    scripted_server.enqueue(fault)
    with pytest.raises(error or LLMUnavailable) as info:
        await run_react(build_context(sdk_llm))
    if error is None:
        assert not isinstance(info.value, StreamCutOff)
    assert events.answer_text() == "The answer is"  # never a silently short answer
    assert len(scripted_server.requests) == 1  # text was shown: no retry


async def test_dag_steps_stream_their_progress_into_the_plan(
    scripted_server, sdk_llm, build_context, events
):
    plan = {"steps": [{"id": "s1", "task": "Work out 6*7", "depends_on": []}]}
    verdict = {"achieved": True, "confidence": 0.9, "reason": "done"}
    scripted_server.enqueue(
        text(json.dumps(plan)),
        tool_calls(("calculator", {"expression": "6*7"}), content="Computing. "),
        text("6*7 is 42."),
        text(json.dumps(verdict)),
        text("The answer is 42."),
    )
    outcome = await run_dag(build_context(sdk_llm))
    progress = events.of("dag.step.delta")
    assert {(p["id"], p["round"]) for p in progress} == {("s1", 0)}
    assert "".join(p["text"] for p in progress) == "Computing. 6*7 is 42."
    # A step's text is never the answer; its thought is a step event of that step.
    assert events.answer_text() == outcome.answer == "The answer is 42."
    thought = [s for s in events.of("step") if s["kind"] == "thought"]
    assert thought == [{"iteration": 1, "kind": "thought", "text": "Computing.", "step_id": "s1"}]
    steps = [r for r in scripted_server.requests if r.get("tools")]
    assert len(steps) == 2 and all(r["stream"] for r in steps)
