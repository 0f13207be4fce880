"""The offline model drives ReAct and DAG runs end to end (RD.1, RR)."""

from __future__ import annotations

import json
import re

import pytest

from contextmgmt.core.messages import ChatMessage
from fimone.agent import default_tools, run_dag, run_react
from fimone.llm.offline.model import OfflineLLM
from tests.support.fake_llm import FakeLLM


async def locker_search(query: str, limit: int) -> list[str]:
    passages = ["My locker code is 4711-B.", "Lunch is at noon."]
    return [p for p in passages if any(w in p.lower() for w in query.lower().split())][:limit]


@pytest.fixture
def offline_context(build_context):
    def build(query: str, **overrides):
        llm = OfflineLLM()
        fields = {
            "fast_llm": llm,
            "compact_llm": llm,
            "tools": default_tools(recall_search=locker_search),
            "query": query,
        }
        return build_context(llm, **{**fields, **overrides})

    return build


async def test_react_calculates_with_the_offline_model(offline_context, events):
    outcome = await run_react(offline_context("What is 1234 * 5678?"))
    assert outcome.status == "done"
    assert "7006652" in outcome.answer
    assert [(p["kind"], p["name"]) for p in events.of("step")] == [
        ("tool_call", "calculator"),
        ("tool_result", "calculator"),
    ]
    assert events.of("step")[1]["result"] == "7006652"
    assert events.answer_text() == outcome.answer
    assert outcome.usage.input_tokens > 0 and outcome.usage.output_tokens > 0


async def test_react_computes_every_calculation_asked_at_once(offline_context, events):
    outcome = await run_react(offline_context("What is 17*23 and 19*29?"))
    assert outcome.status == "done"
    assert "391" in outcome.answer and "551" in outcome.answer
    calls = [p for p in events.of("step") if p["kind"] == "tool_call"]
    assert [json.loads(c["arguments"])["expression"] for c in calls] == ["17*23", "19*29"]


async def test_react_recalls_an_exact_passage(offline_context, events):
    outcome = await run_react(offline_context("What did I say earlier about the locker?"))
    assert events.of("step")[0]["name"] == "recall"
    assert "My locker code is 4711-B." in outcome.answer


async def test_react_with_history_over_budget_is_summarised_by_the_offline_model(
    offline_context, events
):
    history = []
    for i in range(40):
        history.append(
            ChatMessage(role="user", content=f"Note {i}: shipment {1000 + i} left. " * 20)
        )
        history.append(ChatMessage(role="assistant", content=f"Recorded shipment {1000 + i}."))
    ctx = offline_context("What is 2 + 2?", history=history, main_budget=4_000)
    outcome = await run_react(ctx)
    assert "4" in outcome.answer
    compact = events.of("compact")[0]
    assert compact["scope"] == "iteration" and compact["strategy"] == "llm"
    assert compact["tokens_after"] <= 4_000 < compact["tokens_before"]
    assert outcome.compaction_usage.input_tokens > 0


async def test_dag_plans_runs_steps_in_parallel_and_answers(offline_context, events):
    query = "Calculate 12 * 12 and tell me the current time"
    outcome = await run_dag(offline_context(query))

    (plan,) = events.of("dag.plan")
    assert [s["id"] for s in plan["steps"]] == ["s1", "s2", "s3"]
    assert plan["steps"][2]["depends_on"] == ["s1", "s2"]
    statuses = [(p["id"], p["status"]) for p in events.of("dag.step")]
    assert statuses[:2] == [("s1", "running"), ("s2", "running")]  # independent: both start
    assert {(i, s) for i, s in statuses if s != "running"} == {
        ("s1", "done"),
        ("s2", "done"),
        ("s3", "done"),
    }
    tool_names = {p["name"] for p in events.of("step") if p["kind"] == "tool_call"}
    assert tool_names == {"calculator", "current_time"}
    assert events.of("dag.analysis")[0]["achieved"] is True
    assert "144" in outcome.answer
    assert events.answer_text() == outcome.answer
    assert outcome.status == "done" and outcome.iterations == 1


async def test_dag_summarises_a_long_history_for_the_planner(offline_context, events):
    history = []
    for i in range(30):
        history.append(
            ChatMessage(role="user", content=f"Budget line {i}: 1,{i:03d} EUR for item {i}. " * 60)
        )
        history.append(ChatMessage(role="assistant", content=f"Noted budget line {i}."))
    outcome = await run_dag(offline_context("Add 250 + 750 and tell me the time", history=history))
    planner = [c for c in events.of("compact") if c["scope"] == "planner"]
    assert planner and planner[0]["strategy"] == "llm"
    assert planner[0]["tokens_before"] > 16_000 >= planner[0]["tokens_after"]
    assert "1000" in outcome.answer


DAG_DEMO = "First compute 3+4, then multiply that result by 10, and report both."


async def test_dag_demo_plans_a_real_dependency_and_reports_both_results(offline_context, events):
    """The DAG demo: "then … that result" depends on the step before, the step reads its
    dependency's result, and the answer holds both 7 and 70 (RD.1, RD.2)."""
    outcome = await run_dag(offline_context(DAG_DEMO))

    (plan,) = events.of("dag.plan")
    deps = {s["id"]: s["depends_on"] for s in plan["steps"]}
    assert deps == {"s1": [], "s2": ["s1"], "s3": ["s1", "s2"]}
    calls = {
        p["step_id"]: json.loads(p["arguments"])["expression"]
        for p in events.of("step")
        if p["kind"] == "tool_call"
    }
    assert calls == {"s1": "3+4", "s2": "7 * 10"}
    assert events.of("dag.analysis")[0]["achieved"] is True
    assert re.search(r"(?<!\d)7(?!\d)", outcome.answer) and "70" in outcome.answer
    assert "Result of step" not in outcome.answer  # the engine's frames are not the answer


async def test_dag_demo_in_chinese_and_german_answers_in_that_language(offline_context, events):
    outcome = await run_dag(offline_context("先计算 3+4，然后把这个结果乘以 10。"))
    assert "70" in outcome.answer and "离线模型" in outcome.answer
    assert "offline model" not in outcome.answer
    outcome = await run_dag(
        offline_context("Zuerst berechne 3+4, dann multipliziere das Ergebnis mit 10.")
    )
    assert "70" in outcome.answer and "Offline-Modell" in outcome.answer


async def test_the_offline_analyser_rejects_steps_that_lack_a_requested_result(
    offline_context, events
):
    """A scripted worker that never computes 70: the offline analyser names the missing
    figure and the engine plans again instead of calling it a success."""
    worker = FakeLLM(default="The result is 7.")
    outcome = await run_dag(offline_context(DAG_DEMO, fast_llm=worker))
    first = events.of("dag.analysis")[0]
    assert first["achieved"] is False
    assert "70" in first["reason"]
    assert len(events.of("dag.plan")) >= 2  # re-planned
    assert outcome.status == "done"


@pytest.mark.parametrize(
    ("request_text", "note"),
    [
        ("Berechne zuerst 2+3, dann verdopple das Ergebnis", "Offline-Modell"),
        ("先计算2+3，然后把结果翻倍", "离线模型"),
        ("First compute 2+3, then double the result", "offline model"),
    ],
)
async def test_dag_doubles_the_first_result_in_every_language(
    offline_context, events, request_text, note
):
    """The second step doubles the first one's value instead of repeating it, the analyser
    sees both values in the answer, and the answer states 5 and 10 in the user's language."""
    outcome = await run_dag(offline_context(request_text))
    calls = {
        p["step_id"]: json.loads(p["arguments"])["expression"]
        for p in events.of("step")
        if p["kind"] == "tool_call"
    }
    assert calls == {"s1": "2+3", "s2": "5 * 2"}
    (analysis,) = events.of("dag.analysis")
    assert analysis["achieved"] is True
    assert re.search(r"(?<!\d)5(?!\d)", outcome.answer) and "10" in outcome.answer
    assert note in outcome.answer


async def test_a_german_step_that_skips_its_work_is_not_reported_achieved(offline_context, events):
    """A worker that only repeats the first value: the offline analyser says in German that
    10 is missing and the engine plans again."""
    worker = FakeLLM(default="`2+3` = 5")
    outcome = await run_dag(
        offline_context("Berechne zuerst 2+3, dann verdopple das Ergebnis", fast_llm=worker)
    )
    first = events.of("dag.analysis")[0]
    assert first["achieved"] is False and first["confidence"] < 0.8
    assert "10" in first["reason"] and first["reason"].startswith("die Antwort nennt nicht")
    assert len(events.of("dag.plan")) >= 2
    assert outcome.status == "done"


async def test_dag_runs_a_chain_of_three_in_german(offline_context, events):
    """ "zuerst …, dann verdopple …, und dann addiere 1": a step per link, each computing on
    the one before, and an answer holding 5, 10 and 11."""
    outcome = await run_dag(
        offline_context("Berechne zuerst 2+3, dann verdopple das Ergebnis und dann addiere 1")
    )
    calls = {
        p["step_id"]: json.loads(p["arguments"])["expression"]
        for p in events.of("step")
        if p["kind"] == "tool_call"
    }
    assert calls == {"s1": "2+3", "s2": "5 * 2", "s3": "10 + 1"}
    (analysis,) = events.of("dag.analysis")
    assert analysis["achieved"] is True
    assert all(re.search(rf"(?<!\d){n}(?!\d)", outcome.answer) for n in ("5", "10", "11"))
