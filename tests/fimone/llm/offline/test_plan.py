"""The offline planner and analyser: a request becomes a plan of parallel steps and a
combining one, about the current request only, in the request's language; a verdict is
"achieved" only when every step has a result that is not a failure."""

from __future__ import annotations

import json

import pytest

from contextmgmt.core.messages import ChatMessage
from fimone.llm.offline.text import detect_language

PLANNER = "You are the planner. Reply with a JSON plan only."
ANALYSER = "Reply with a JSON verdict only."


# --- planner ---------------------------------------------------------------------------------


def plan_of(result) -> list[dict]:
    plan = json.loads(result.message.content)
    steps = plan["steps"]
    ids = [s["id"] for s in steps]
    assert 2 <= len(steps) <= 3 and len(set(ids)) == len(ids)
    for step in steps:
        assert set(step) == {"id", "task", "depends_on"} and step["task"].strip()
    # The last step depends on every other step; the others depend on nothing.
    assert sorted(steps[-1]["depends_on"]) == sorted(ids[:-1])
    assert all(s["depends_on"] == [] for s in steps[:-1])
    return steps


async def planned(llm, request: str, **opts) -> list[dict]:
    """The offline planner's steps for ``request`` (checked by ``plan_of``)."""
    messages = [
        ChatMessage(role="system", content=PLANNER),
        ChatMessage(role="user", content=request),
    ]
    return plan_of(await llm.chat(messages, **opts))


async def test_a_two_part_request_becomes_two_parallel_steps_and_a_combining_one(offline_llm):
    steps = await planned(
        offline_llm,
        "What is 12*7 and then what time is it in UTC?",
        response_format={"type": "json_object"},
    )
    assert len(steps) == 3
    assert "12*7" in steps[0]["task"]
    assert "time" in steps[1]["task"]


async def test_a_single_request_becomes_gather_then_answer(offline_llm):
    steps = await planned(offline_llm, "Explain how our Q3 budget of 4,200 EUR was spent")
    assert len(steps) == 2
    assert "4,200 EUR" in steps[0]["task"]


async def test_the_plan_is_about_the_current_request_not_the_history(offline_llm):
    enriched = (
        "Previous conversation:\n\nUser: Tell me about penguins.\n\nAssistant: They swim.\n\n"
        "Current request:\nCompare the prices 19.99 and 24.50\n\n"
        "A previous plan (attempt 1) did not achieve this request. The checker said: no\n"
        "Its steps and results:\n- s1 (x): (step failed: boom)"
    )
    steps = await planned(offline_llm, enriched)
    tasks = " ".join(s["task"] for s in steps)
    assert "19.99" in tasks and "24.50" in tasks
    assert "penguin" not in tasks and "previous plan" not in tasks and "boom" not in tasks


async def test_a_chinese_request_gets_a_chinese_plan(offline_llm):
    steps = await planned(offline_llm, "总结一下第二季度的预算情况")
    assert all(detect_language(s["task"]) == "zh" for s in steps)


# --- analyser --------------------------------------------------------------------------------


def analyser_input(results: dict[str, str]) -> str:
    """The shape fimone.agent's analyser input takes: a header per step, then its result."""
    blocks = [f"### Step {sid}: task {sid}\n{text}" for sid, text in results.items()]
    return "User request:\nDo things\n\nStep results:\n\n" + "\n\n".join(blocks)


async def verdict(llm, results: dict[str, str]) -> dict:
    messages = [
        ChatMessage(role="system", content=ANALYSER),
        ChatMessage(role="user", content=analyser_input(results)),
    ]
    return json.loads((await llm.chat(messages)).message.content)


async def test_every_step_with_a_result_is_achieved(offline_llm):
    got = await verdict(offline_llm, {"s1": "84", "s2": "It is 10:30 UTC.", "s3": "84, 10:30"})
    assert got["achieved"] is True
    assert got["confidence"] >= 0.8
    assert got["reason"]


@pytest.mark.parametrize(
    "bad", ["(step failed: calculator timed out)", "", "Error: division by zero"]
)
async def test_a_failed_or_empty_step_is_not_achieved(offline_llm, bad):
    got = await verdict(offline_llm, {"s1": "84", "s2": bad})
    assert got["achieved"] is False
    assert got["confidence"] < 0.8  # low enough for the engine to re-plan
    assert "s2" in got["reason"]


async def test_a_result_that_merely_mentions_errors_is_still_achieved(offline_llm):
    got = await verdict(offline_llm, {"s1": "Error handling in Python uses try/except."})
    assert got["achieved"] is True


async def test_a_request_of_many_parts_still_makes_at_most_three_steps(offline_llm):
    steps = await planned(offline_llm, "What is 2+3? What time is it? Who wrote Faust?")
    assert len(steps) == 3
    tasks = " ".join(s["task"] for s in steps[:2])
    assert "2+3" in tasks and "time" in tasks and "Faust" in tasks


async def test_no_step_results_at_all_is_not_achieved(offline_llm):
    messages = [
        ChatMessage(role="system", content=ANALYSER),
        ChatMessage(role="user", content="User request:\nDo things\n\nStep results:\n\n"),
    ]
    got = json.loads((await offline_llm.chat(messages)).message.content)
    assert got["achieved"] is False
