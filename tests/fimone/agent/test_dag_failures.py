"""DAG engine under LLM failures (SPEC RD.3, RD.5, RU.3).

A failed planner call is asked again, then the one-step fallback plan takes over; a failed or
unreadable analyser leaves the verdict unknown and the answer is still written from the step
results; a provider context overflow at the planner, the analyser or the final answer
compacts the input and retries once. Auth errors and cancellation are not swallowed.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from contextmgmt.core.llm import (
    ContextOverflow,
    LLMAuthError,
    LLMBadResponse,
    LLMRateLimited,
    LLMTimeout,
    LLMUnavailable,
)
from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.prompts import compact_prompt
from fimone.agent import run_dag
from tests.support.fake_llm import FakeLLM, Hang

PLAN = json.dumps({"steps": [{"id": "s1", "task": "find the figure", "depends_on": []}]})
VERDICT = json.dumps({"achieved": True, "confidence": 0.95, "reason": "checked"})


def worker(messages: list[ChatMessage]) -> str:
    return f"result of [{messages[-1].text().removeprefix('Your task: ')}]"


def long_history(turns: int = 20) -> list[ChatMessage]:
    history = []
    for i in range(turns):
        history.append(
            ChatMessage(role="user", content=f"Turn {i}: budget line {i} is 1,{i:03d} EUR. " * 30)
        )
        history.append(ChatMessage(role="assistant", content=f"Noted line {i}."))
    return history


def calls_to(llm: FakeLLM, marker: str) -> list:
    """The calls whose system prompt contains ``marker`` ("JSON plan", "JSON verdict")."""
    return [c for c in llm.calls if c.messages and marker in c.messages[0].text()]


# --- planner (RD.3) ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "failure", [LLMUnavailable("503"), LLMBadResponse("no choices"), LLMRateLimited("429")]
)
async def test_a_failed_planner_call_is_asked_again(build_context, events, failure):
    llm = FakeLLM().enqueue(failure, PLAN, VERDICT, "The figure is 42.")
    outcome = await run_dag(build_context(llm, fast_llm=FakeLLM(default=worker)))

    assert len(calls_to(llm, "JSON plan")) == 2
    (plan,) = events.of("dag.plan")
    assert plan["fallback"] is False and plan["steps"][0]["task"] == "find the figure"
    assert outcome.answer == "The figure is 42."


@pytest.mark.parametrize(
    "first, second",
    [
        (LLMUnavailable("503"), LLMUnavailable("503 again")),
        ("not a plan", LLMUnavailable("503")),
        (LLMUnavailable("503"), "still not a plan"),
    ],
)
async def test_a_planner_failing_twice_falls_back_to_one_step(build_context, events, first, second):
    llm = FakeLLM().enqueue(first, second, VERDICT, "Here is your trip.")
    fast = FakeLLM(default=worker)
    outcome = await run_dag(build_context(llm, fast_llm=fast, query="Plan my trip."))

    assert events.of("dag.plan") == [
        {
            "steps": [{"id": "s1", "task": "Plan my trip.", "depends_on": []}],
            "round": 0,
            "fallback": True,
        }
    ]
    assert [c.messages[-1].text() for c in fast.calls] == ["Your task: Plan my trip."]
    assert outcome.status == "done" and outcome.answer == "Here is your trip."


async def test_a_hung_planner_meets_the_run_time_limit_then_the_fallback(build_context, events):
    """ctx.llm_timeout bounds the planner's call. After a whole time limit spent
    waiting, the run asks no optional question of that model: no re-asked plan (fallback at
    once), no analyser; the answer is still written from the step's result."""
    llm = FakeLLM().enqueue(Hang(), "Answer.")
    fast = FakeLLM(default=worker)
    ctx = build_context(llm, fast_llm=fast, llm_timeout=0.05, query="Plan my trip.")
    outcome = await run_dag(ctx)

    assert events.of("dag.plan")[0]["fallback"] is True
    assert [c.messages[-1].text() for c in fast.calls] == ["Your task: Plan my trip."]
    (analysis,) = events.of("dag.analysis")
    assert analysis["achieved"] is None and "timed out earlier" in analysis["reason"]
    assert [c.method for c in llm.calls] == ["chat", "stream_chat"]  # planner, answer
    assert outcome.answer == "Answer."


async def test_an_auth_error_at_the_planner_fails_fast(build_context):
    llm = FakeLLM().enqueue(LLMAuthError("bad key"))
    fast = FakeLLM(default=worker)
    with pytest.raises(LLMAuthError):
        await run_dag(build_context(llm, fast_llm=fast))
    assert len(llm.calls) == 1 and not fast.calls


class SignallingLLM(FakeLLM):
    """A FakeLLM that sets ``started`` when a call begins."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.started = asyncio.Event()

    async def chat(self, messages, *, tools=None, **opts):
        self.started.set()
        return await super().chat(messages, tools=tools, **opts)


async def test_cancellation_during_the_planner_call_propagates(build_context):
    llm = SignallingLLM().enqueue(Hang())
    run = asyncio.create_task(run_dag(build_context(llm)))
    await asyncio.wait_for(llm.started.wait(), timeout=10)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(run, timeout=10)  # a fail-safe, not a timing assertion
    assert len(llm.calls) == 1  # not asked again


async def test_planner_overflow_summarises_the_history_and_retries(build_context, events):
    """RD.2: the provider refused the request as too long → the history part is
    summarised (planner_input) to half its size, the current request kept, asked again."""
    compactor = FakeLLM(default="Budget lines 0-19 were discussed, 1,000-1,019 EUR.")
    llm = FakeLLM().enqueue(ContextOverflow("maximum context length"), PLAN, VERDICT, "42.")
    offered = []

    async def on_compaction(scope, result):
        offered.append(scope)
        return 7

    ctx = build_context(
        llm,
        fast_llm=FakeLLM(default=worker),
        compact_llm=compactor,
        history=long_history(),
        query="Sum the budget lines.",
        on_compaction=on_compaction,
    )
    outcome = await run_dag(ctx)

    refused, retried = (c.messages[1].text() for c in calls_to(llm, "JSON plan"))
    assert retried.endswith("Sum the budget lines.") and len(retried) < len(refused) // 2
    assert "1,000-1,019 EUR" in retried
    (compact,) = [c for c in events.of("compact") if c["scope"] == "planner"]
    assert compact["strategy"] == "llm" and compact["tokens_after"] <= compact["tokens_before"] // 2
    # The half-size summary serves this request only: it is not offered for storing.
    assert offered == [] and compact["overflow_retry"] is True and "summary_id" not in compact
    call = compactor.calls[-1]
    assert call.messages[0].text() == compact_prompt("planner_input", call.opts["max_tokens"])
    assert events.of("dag.plan")[0]["fallback"] is False
    assert outcome.answer == "42."


async def test_planner_overflowing_twice_falls_back(build_context, events):
    llm = FakeLLM().enqueue(ContextOverflow("too long"), ContextOverflow("too long"), VERDICT, "ok")
    ctx = build_context(llm, fast_llm=FakeLLM(default=worker), history=long_history(4))
    outcome = await run_dag(ctx)
    assert events.of("dag.plan")[0]["fallback"] is True
    assert outcome.answer == "ok"


# --- analyser (RD.5) ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "failure",
    [LLMUnavailable("503"), LLMTimeout("slow"), LLMBadResponse("bad"), "I think it went fine"],
)
async def test_a_failing_analyser_leaves_the_verdict_unknown_and_still_answers(
    build_context, events, failure
):
    llm = FakeLLM().enqueue(PLAN, failure, "The figure is 42.")
    outcome = await run_dag(build_context(llm, fast_llm=FakeLLM(default=worker)))

    (analysis,) = events.of("dag.analysis")
    assert analysis["achieved"] is None and analysis["confidence"] is None
    assert analysis["reason"]
    assert not events.of("dag.replan")
    final = llm.calls[-1]
    assert final.method == "stream_chat"
    assert any("result of [find the figure]" in m.text() for m in final.messages)
    assert outcome.status == "done" and outcome.answer == "The figure is 42."
    assert events.answer_text() == outcome.answer


async def test_a_hung_analyser_meets_the_run_time_limit(build_context, events):
    llm = FakeLLM().enqueue(PLAN, Hang(), "Answer.")
    ctx = build_context(llm, fast_llm=FakeLLM(default=worker), llm_timeout=0.05)
    outcome = await run_dag(ctx)
    assert events.of("dag.analysis")[0]["achieved"] is None
    assert "LLMTimeout" in events.of("dag.analysis")[0]["reason"]
    assert outcome.answer == "Answer."


async def test_an_auth_error_at_the_analyser_fails_fast(build_context):
    llm = FakeLLM().enqueue(PLAN, LLMAuthError("revoked"))
    with pytest.raises(LLMAuthError):
        await run_dag(build_context(llm, fast_llm=FakeLLM(default=worker)))
    assert [c.method for c in llm.calls] == ["chat", "chat"]


async def test_analyser_overflow_clips_its_input_and_retries(build_context, events):
    big = "x" * 9_000  # each result well under the 10K cut (RD.5): only the retry clips
    fast = FakeLLM(default=lambda m: f"{big} [{m[-1].text()}]")
    two = json.dumps(
        {"steps": [{"id": "s1", "task": "a", "depends_on": []}, {"id": "s2", "task": "b"}]}
    )
    llm = FakeLLM().enqueue(two, ContextOverflow("too long"), VERDICT, "Done.")
    outcome = await run_dag(build_context(llm, fast_llm=fast))

    refused, retried = (c.messages[1].text() for c in calls_to(llm, "JSON verdict"))
    assert len(retried) < len(refused) // 2 + 200
    assert "### Step s1" in retried and "### Step s2" in retried
    assert events.of("dag.analysis")[0]["achieved"] is True
    assert outcome.answer == "Done."


async def test_analyser_overflowing_twice_leaves_the_verdict_unknown(build_context, events):
    llm = FakeLLM().enqueue(PLAN, ContextOverflow("a"), ContextOverflow("b"), "Answer.")
    outcome = await run_dag(build_context(llm, fast_llm=FakeLLM(default=worker)))
    analysis = events.of("dag.analysis")[0]
    assert analysis["achieved"] is None and "ContextOverflow" in analysis["reason"]
    assert outcome.answer == "Answer."


# --- the final answer ---------------------------------------------------------------------


async def test_final_answer_overflow_compacts_the_step_results_and_retries(build_context, events):
    """The synthesis loop retries a provider overflow once on a compacted context, with the
    step_dependency hint (its context is step results: keep data, numbers, conclusions)."""
    compactor = FakeLLM(default="Steps s1-s6 found the figures 41 to 46.")
    fast = FakeLLM(default=lambda m: f"figure {m[-1].text()} " * 400)
    six = json.dumps({"steps": [{"id": f"s{i}", "task": f"t{i}"} for i in range(1, 7)]})
    llm = FakeLLM().enqueue(six, VERDICT, ContextOverflow("too long"), "41 to 46.")
    outcome = await run_dag(build_context(llm, fast_llm=fast, compact_llm=compactor))

    refused, retried = (c for c in llm.calls if c.method == "stream_chat")
    assert len(retried.messages) < len(refused.messages)
    assert retried.messages[-1].text() == refused.messages[-1].text()  # the request, pinned
    assert any(m.is_summary for m in retried.messages)
    call = compactor.calls[-1]
    assert call.messages[0].text() == compact_prompt("step_dependency", call.opts["max_tokens"])
    assert events.of("compact")[-1]["strategy"] == "llm"
    assert outcome.answer == "41 to 46." == events.answer_text()


async def test_a_hung_final_answer_stream_ends_the_run_with_a_timeout(build_context):
    llm = FakeLLM().enqueue(PLAN, VERDICT, Hang())
    ctx = build_context(llm, fast_llm=FakeLLM(default=worker), llm_timeout=0.05)
    with pytest.raises(LLMTimeout):
        await run_dag(ctx)


async def test_a_hung_step_fails_that_step_only(build_context, events):
    fast = FakeLLM().enqueue(Hang())
    llm = FakeLLM().enqueue(PLAN, VERDICT, "Sorry, the step failed.")
    outcome = await run_dag(build_context(llm, fast_llm=fast, llm_timeout=0.05))
    (done,) = [e for e in events.of("dag.step") if e["status"] != "running"]
    assert done["status"] == "error" and "LLMTimeout" in done["error"]
    assert outcome.answer == "Sorry, the step failed."
