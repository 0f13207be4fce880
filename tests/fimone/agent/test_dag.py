"""DAG engine (issue 6; SPEC RD.1–RD.6, R5.3) with scripted fake LLMs."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from contextmgmt.core.llm import LLMUnavailable
from contextmgmt.core.messages import ChatMessage
from contextmgmt.core.prompts import compact_prompt
from contextmgmt.core.tokens import estimate_tokens
from fimone.agent import run_dag
from fimone.agent.dag import DagConfig
from fimone.agent.dag_context import (
    ANALYSER_RESULT_CHARS,
    DEPENDENCY_CHARS,
    PLANNER_INPUT_TOKENS,
    REPLAN_RESULT_CHARS,
    StepOutcome,
    _build_step_context,
    analyser_input,
    enriched_query,
    format_history,
    replan_feedback,
)
from fimone.agent.plan import Step, Verdict
from fimone.agent.react import tool_schema_tokens
from tests.support.fake_llm import FakeLLM, _estimate


def plan(*steps: tuple[str, str, list[str]]) -> str:
    return json.dumps({"steps": [{"id": i, "task": t, "depends_on": d} for i, t, d in steps]})


def verdict(achieved: bool, confidence: float, reason: str = "checked") -> str:
    return json.dumps({"achieved": achieved, "confidence": confidence, "reason": reason})


def task_of(messages: list[ChatMessage]) -> str:
    return messages[-1].text().removeprefix("Your task: ")


def worker(messages: list[ChatMessage]) -> str:
    """A fast LLM that answers each step with a result naming its task."""
    return f"result of [{task_of(messages)}]"


TWO_STEP_PLAN = plan(("s1", "find the figure", []), ("s2", "double it", ["s1"]))


def main_llm(*replies) -> FakeLLM:
    return FakeLLM().enqueue(*replies)


async def test_plan_execute_analyse_answer(build_context, events):
    llm = main_llm(TWO_STEP_PLAN, verdict(True, 0.95), "The doubled figure is 84.")
    fast = FakeLLM(default=worker)
    outcome = await run_dag(build_context(llm, fast_llm=fast, query="Double the figure."))

    planner, analyser, final = llm.calls
    assert len(planner.messages) == 2  # RD.3: exactly system + enriched query
    assert "JSON plan" in planner.messages[0].content
    assert planner.messages[1].content == "Double the figure."
    assert "JSON verdict" in analyser.messages[0].content
    assert "### Step s2: double it\nresult of [double it]" in analyser.messages[1].content
    assert final.method == "stream_chat" and final.tools is None
    assert final.messages[-1].content == "Double the figure." and final.messages[-1].pinned
    assert any("result of [double it]" in m.text() for m in final.messages)

    s2_call = next(c for c in fast.calls if task_of(c.messages) == "double it")
    assert "Result of step s1 (find the figure):\nresult of [find the figure]" in (
        s2_call.messages[1].content
    )
    assert events.of("dag.plan") == [
        {
            "steps": [
                {"id": "s1", "task": "find the figure", "depends_on": []},
                {"id": "s2", "task": "double it", "depends_on": ["s1"]},
            ],
            "round": 0,
            "fallback": False,
        }
    ]
    assert [(p["id"], p["status"]) for p in events.of("dag.step")] == [
        ("s1", "running"),
        ("s1", "done"),
        ("s2", "running"),
        ("s2", "done"),
    ]
    assert events.of("dag.step")[1]["result"] == "result of [find the figure]"
    assert events.of("dag.analysis") == [
        {"achieved": True, "confidence": 0.95, "reason": "checked"}
    ]
    assert events.answer_text() == outcome.answer == "The doubled figure is 84."
    assert outcome.status == "done" and outcome.iterations == 1
    every_call = llm.calls + fast.calls
    assert outcome.usage.input_tokens == sum(_estimate(c.messages) for c in every_call)


async def test_sub_agents_do_not_stream_to_the_user(build_context, events):
    llm = main_llm(TWO_STEP_PLAN, verdict(True, 0.9), "answer")
    await run_dag(build_context(llm, fast_llm=FakeLLM(default=worker)))
    assert events.answer_text() == "answer"
    assert "result of" not in events.answer_text()


async def test_steps_use_tools_and_report_them_with_their_step_id(build_context, events):
    llm = main_llm(plan(("s1", "compute 6*7", [])), verdict(True, 0.9), "42")
    fast = FakeLLM().enqueue(
        FakeLLM().tool_call("calculator", '{"expression": "6*7"}', "c1"), "It is 42."
    )
    await run_dag(build_context(llm, fast_llm=fast))
    assert [(p["kind"], p["step_id"]) for p in events.of("step")] == [
        ("tool_call", "s1"),
        ("tool_result", "s1"),
    ]
    assert events.of("dag.step")[-1]["result"] == "It is 42."


async def test_invalid_plan_is_re_asked_once_with_the_error(build_context, events):
    llm = main_llm("Sure! Step one…", TWO_STEP_PLAN, verdict(True, 0.9), "ok")
    await run_dag(build_context(llm, fast_llm=FakeLLM(default=worker), query="Q?"))
    first, second = llm.calls[:2]
    assert len(second.messages) == 2
    assert second.messages[1].content.startswith("Q?\n\nYour previous reply was not a valid plan")
    assert "malformed JSON" in second.messages[1].content
    assert events.of("dag.plan")[0]["fallback"] is False


@pytest.mark.parametrize(
    "bad_second",
    [
        plan(("s1", "a", ["s2"]), ("s2", "b", ["s1"])),  # cycle
        plan(("s1", "a", ["nope"])),  # unknown dependency
        '{"steps": []}',  # empty
        plan(("s1", "a", []), ("s1", "b", [])),  # duplicate ids
    ],
)
async def test_twice_invalid_plan_falls_back_to_one_step(build_context, events, bad_second):
    llm = main_llm("not json", bad_second, verdict(True, 0.9), "ok")
    fast = FakeLLM(default=worker)
    await run_dag(build_context(llm, fast_llm=fast, query="Plan my trip."))
    assert events.of("dag.plan") == [
        {
            "steps": [{"id": "s1", "task": "Plan my trip.", "depends_on": []}],
            "round": 0,
            "fallback": True,
        }
    ]
    assert [task_of(c.messages) for c in fast.calls] == ["Plan my trip."]


class GatedLLM(FakeLLM):
    """A fast LLM whose calls wait until ``expect`` of them are in flight at once.

    Sequential execution would never open the gate (the test's fail-safe timeout fires);
    concurrent execution opens it. The log shows every start before any finish.
    """

    def __init__(self, expect: int) -> None:
        super().__init__()
        self.expect = expect
        self.in_flight = 0
        self.max_in_flight = 0
        self.gate = asyncio.Event()
        self.log: list[str] = []

    async def _next(self, method, messages, tools, opts):
        task = task_of(messages)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.log.append(f"start {task}")
        if self.in_flight >= self.expect:
            self.gate.set()
        await self.gate.wait()
        self.in_flight -= 1
        self.log.append(f"end {task}")
        self.queue = [f"done {task}"]
        return await super()._next(method, messages, tools, opts)


async def test_independent_steps_run_concurrently(build_context):
    llm = main_llm(
        plan(("a", "A", []), ("b", "B", []), ("c", "C", ["a", "b"])), verdict(True, 0.9), "ok"
    )
    fast = GatedLLM(expect=2)
    await asyncio.wait_for(run_dag(build_context(llm, fast_llm=fast)), timeout=10)
    assert fast.log[:2] == ["start A", "start B"]
    assert fast.log[2:4] in (["end A", "end B"], ["end B", "end A"])
    assert fast.log[4:] == ["start C", "end C"]  # after both of its dependencies


async def test_parallelism_is_bounded(build_context):
    steps = [(f"s{i}", f"T{i}", []) for i in range(5)]
    llm = main_llm(plan(*steps), verdict(True, 0.9), "ok")
    fast = GatedLLM(expect=2)
    ctx = build_context(llm, fast_llm=fast)
    await asyncio.wait_for(run_dag(ctx, DagConfig(max_parallel=2)), timeout=10)
    assert fast.max_in_flight == 2
    assert len([e for e in fast.log if e.startswith("end")]) == 5


async def test_a_failed_step_fails_its_dependents_and_the_rest_goes_on(build_context, events):
    def flaky(messages):
        if task_of(messages) == "fetch":
            raise LLMUnavailable("fast model down")
        return worker(messages)

    llm = main_llm(
        plan(("s1", "fetch", []), ("s2", "use it", ["s1"]), ("s3", "other", [])),
        verdict(True, 0.9),
        "partial answer",
    )
    outcome = await run_dag(build_context(llm, fast_llm=FakeLLM(default=flaky)))
    finals = {p["id"]: p for p in events.of("dag.step") if p["status"] != "running"}
    assert finals["s1"] == {
        "id": "s1",
        "status": "error",
        "round": 0,
        "error": "LLMUnavailable: fast model down",
    }
    assert finals["s2"]["error"] == "skipped: step s1 failed"
    assert finals["s3"]["status"] == "done"
    assert "(step failed: LLMUnavailable: fast model down)" in llm.calls[1].messages[1].content
    assert outcome.answer == "partial answer"


# --- the limits, with exact boundaries ------------------------------------------------------


def history_with_enriched_length(query: str, length: int) -> list[ChatMessage]:
    """A one-message history whose enriched query is exactly ``length`` ASCII chars."""
    base = enriched_query(format_history([ChatMessage(role="user", content="h")]), query)
    return [ChatMessage(role="user", content="h" * (length - len(base) + 1))]


def shortest_enriched_length_over(query: str, tokens: int) -> int:
    """The fewest characters for which the enriched query is estimated above ``tokens``."""

    def estimate(length: int) -> int:
        history = history_with_enriched_length(query, length)
        return estimate_tokens(enriched_query(format_history(history), query))

    lo, hi = tokens, tokens * 8
    while lo < hi:
        mid = (lo + hi) // 2
        if estimate(mid) > tokens:
            hi = mid
        else:
            lo = mid + 1
    return lo


@pytest.mark.parametrize("over", [False, True])
async def test_planner_input_limit_is_16k_tokens(build_context, events, over):
    """RD.2: an enriched query of exactly 16,000 tokens goes as it is; 16,001 is summarised."""
    query = "Now plan the launch."
    # One more "h" costs less than a token: the last length at 16,000 and the first above.
    first_over = shortest_enriched_length_over(query, PLANNER_INPUT_TOKENS)
    length = first_over if over else first_over - 1
    history = history_with_enriched_length(query, length)
    enriched = enriched_query(format_history(history), query)
    assert len(enriched) == length
    assert estimate_tokens(enriched) == PLANNER_INPUT_TOKENS + (1 if over else 0)

    compact_llm = FakeLLM(default="The user prepared a launch; budget 12,500 EUR.")
    llm = main_llm(plan(("s1", "t", [])), verdict(True, 0.9), "ok")
    ctx = build_context(
        llm, fast_llm=FakeLLM(default=worker), compact_llm=compact_llm, history=history, query=query
    )
    await run_dag(ctx)

    planner_input = llm.calls[0].messages[1].content
    if not over:
        assert planner_input == enriched
        assert events.of("compact") == []
        return
    call = compact_llm.calls[0]
    assert call.messages[0].content == compact_prompt("planner_input", call.opts["max_tokens"])
    assert planner_input.startswith("Previous conversation:")
    assert "budget 12,500 EUR" in planner_input
    assert planner_input.endswith(f"Current request:\n{query}")
    (compact,) = events.of("compact")
    assert compact["scope"] == "planner" and compact["strategy"] == "llm"
    assert compact["tokens_before"] == PLANNER_INPUT_TOKENS + 1
    assert compact["tokens_after"] == estimate_tokens(planner_input)


async def test_planner_input_without_compaction_llm_drops_oldest_history(build_context, events):
    query = "And now?"
    history = [ChatMessage(role="user", content=f"old {i} " + "z" * 8_000) for i in range(12)]
    llm = main_llm(plan(("s1", "t", [])), verdict(True, 0.9), "ok")
    ctx = build_context(llm, fast_llm=FakeLLM(default=worker), history=history, query=query)
    await run_dag(ctx)
    planner_input = llm.calls[0].messages[1].content
    assert estimate_tokens(planner_input) <= PLANNER_INPUT_TOKENS + 50
    assert "old 11" in planner_input and "old 0 " not in planner_input
    assert events.of("compact")[0]["strategy"] == "truncate"


def outcomes_with(result: str) -> tuple[Step, dict[str, StepOutcome], dict[str, Step]]:
    s1, s2 = Step("s1", "collect"), Step("s2", "use", ("s1",))
    return s2, {"s1": StepOutcome("done", result)}, {"s1": s1, "s2": s2}


async def test_dependency_results_are_cut_at_50k_chars():
    """RD.4: a dependency result of exactly 50,000 chars goes whole; 50,001 is cut."""
    step, outcomes, by_id = outcomes_with("d" * DEPENDENCY_CHARS)
    whole = await _build_step_context(step, outcomes, by_id, budget=10**6, compact_llm=None)
    assert "d" * DEPENDENCY_CHARS in whole.text and "[Truncated" not in whole.text
    assert whole.compaction is None

    step, outcomes, by_id = outcomes_with("d" * (DEPENDENCY_CHARS + 1))
    cut = await _build_step_context(step, outcomes, by_id, budget=10**6, compact_llm=None)
    assert "d" * DEPENDENCY_CHARS + "\n[Truncated: 1 more characters]" in cut.text
    assert "d" * (DEPENDENCY_CHARS + 1) not in cut.text


async def test_dependencies_over_the_step_budget_are_compacted_with_step_dependency():
    step, outcomes, by_id = outcomes_with("Revenue was 1,234,567 EUR. " * 800)
    compact_llm = FakeLLM(default="Revenue: 1,234,567 EUR.")
    context = await _build_step_context(
        step, outcomes, by_id, budget=2_000, compact_llm=compact_llm
    )
    call = compact_llm.calls[0]
    assert call.messages[0].content == compact_prompt("step_dependency", call.opts["max_tokens"])
    assert "Revenue: 1,234,567 EUR." in context.text
    assert context.compaction.strategy == "llm"
    assert estimate_tokens(context.text) <= 1_000


async def test_dependencies_over_budget_without_compaction_llm_are_cut_to_fit():
    step, outcomes, by_id = outcomes_with("x" * 40_000)
    context = await _build_step_context(step, outcomes, by_id, budget=2_000, compact_llm=None)
    assert context.compaction.strategy == "truncate"
    assert estimate_tokens(context.text) <= 1_000 + 20  # the allowance, plus the header


async def test_dependency_context_within_half_the_budget_is_left_alone():
    step, outcomes, by_id = outcomes_with("y" * 3_000)  # ~760 tokens with its label
    context = await _build_step_context(step, outcomes, by_id, budget=2_000, compact_llm=None)
    assert context.compaction is None and "y" * 3_000 in context.text


def test_analyser_sees_results_cut_at_10k_chars():
    """RD.5: exactly 10,000 chars whole, 10,001 cut."""
    steps = [Step("a", "A"), Step("b", "B")]
    outcomes = {
        "a": StepOutcome("done", "a" * ANALYSER_RESULT_CHARS),
        "b": StepOutcome("done", "b" * (ANALYSER_RESULT_CHARS + 1)),
    }
    text = analyser_input("request", steps, outcomes)
    assert "### Step a: A\n" + "a" * ANALYSER_RESULT_CHARS + "\n\n### Step b" in text
    assert "b" * ANALYSER_RESULT_CHARS + "\n[Truncated: 1 more characters]" in text
    assert "b" * (ANALYSER_RESULT_CHARS + 1) not in text


def test_replan_sees_results_cut_at_500_chars():
    """RD.6: exactly 500 chars whole, 501 cut."""
    steps = [Step("a", "A"), Step("b", "B")]
    outcomes = {
        "a": StepOutcome("done", "a" * REPLAN_RESULT_CHARS),
        "b": StepOutcome("done", "b" * (REPLAN_RESULT_CHARS + 1)),
    }
    text = replan_feedback(steps, outcomes, Verdict(False, 0.2, "B is wrong"), 1)
    assert "- a (A): " + "a" * REPLAN_RESULT_CHARS + "\n- b" in text
    assert "b" * REPLAN_RESULT_CHARS + "\n[Truncated: 1 more characters]" in text
    assert "b" * (REPLAN_RESULT_CHARS + 1) not in text
    assert "B is wrong" in text


async def test_analyser_input_is_cut_inside_a_run(build_context):
    llm = main_llm(plan(("s1", "t", [])), verdict(True, 0.9), "ok")
    fast = FakeLLM(default="r" * (ANALYSER_RESULT_CHARS + 5))
    await run_dag(build_context(llm, fast_llm=fast))
    content = llm.calls[1].messages[1].content
    assert "r" * ANALYSER_RESULT_CHARS + "\n[Truncated: 5 more characters]" in content


# --- re-planning -----------------------------------------------------------------------------


async def test_replan_loop_stops_after_two_replans(build_context, events):
    llm = main_llm(
        plan(("s1", "first try", [])),
        verdict(False, 0.3, "figure missing"),
        plan(("s1", "second try", [])),
        verdict(False, 0.4, "still missing"),
        plan(("s1", "third try", [])),
        verdict(False, 0.5, "give up"),
        "best effort",
    )
    fast = FakeLLM(default=lambda m: f"{task_of(m)}: " + "w" * 600)
    outcome = await run_dag(build_context(llm, fast_llm=fast, query="Find it."))

    assert events.of("dag.replan") == [{"round": 1}, {"round": 2}]
    assert [p["round"] for p in events.of("dag.plan")] == [0, 1, 2]
    assert len(events.of("dag.analysis")) == 3
    assert outcome.iterations == 3 and outcome.answer == "best effort"
    replanner = llm.calls[2].messages
    assert len(replanner) == 2 and replanner[1].content.startswith("Find it.\n\n")
    assert "The checker said: figure missing" in replanner[1].content
    cut_off = len("first try: ") + 600 - REPLAN_RESULT_CHARS
    assert f"[Truncated: {cut_off} more characters]" in replanner[1].content
    final = llm.calls[-1].messages
    assert any("earlier attempt 1" in m.text() and "first try" in m.text() for m in final)
    assert any("third try" in m.text() for m in final)


@pytest.mark.parametrize(
    ("achieved", "confidence", "threshold", "replans"),
    [
        (False, 0.79, 0.8, 1),
        (False, 0.8, 0.8, 0),  # the threshold itself is confident enough
        (True, 0.1, 0.8, 0),
        (False, 0.85, 0.9, 1),  # configurable
    ],
)
async def test_replan_threshold(build_context, events, achieved, confidence, threshold, replans):
    replies = [plan(("s1", "t", [])), verdict(achieved, confidence)]
    if replans:
        replies += [plan(("s1", "t2", [])), verdict(True, 0.9)]
    llm = main_llm(*replies, "ok")
    ctx = build_context(llm, fast_llm=FakeLLM(default=worker))
    await run_dag(ctx, DagConfig(replan_threshold=threshold))
    assert len(events.of("dag.replan")) == replans


async def test_unreadable_verdict_does_not_replan(build_context, events):
    llm = main_llm(plan(("s1", "t", [])), "I think it went well!", "ok")
    outcome = await run_dag(build_context(llm, fast_llm=FakeLLM(default=worker)))
    assert events.of("dag.analysis")[0]["achieved"] is None
    assert events.of("dag.replan") == [] and outcome.answer == "ok"


# --- budgets, injections, cancellation -------------------------------------------------------


async def test_steps_use_the_fast_budget_and_the_answer_the_main_one(build_context, spy_guards):
    """R5.3: step guards run on the fast LLM's budget (less the tool definitions each step
    call sends, RT.3); the final answer on the main one.
    RS.1: step sub-agents stream; planner and analyser (JSON) do not."""
    llm = main_llm(TWO_STEP_PLAN, verdict(True, 0.9), "ok")
    fast = FakeLLM(default=worker)
    ctx = build_context(llm, fast_llm=fast, main_budget=50_000, fast_budget=7_000)
    await run_dag(ctx)

    step_budget = 7_000 - tool_schema_tokens(ctx.tools, 7_000)
    step_guards, final_guard = spy_guards[:2], spy_guards[2]
    assert [g.budget for g in step_guards] == [step_budget, step_budget]
    for guard in step_guards:
        assert guard.checks  # called at the top of every step iteration (R3.1)
        assert {(c["budget"], c["hint"]) for c in guard.checks} == {
            (step_budget, "react_iteration")
        }
    assert final_guard.budget == 50_000
    assert [(c["budget"], c["hint"]) for c in final_guard.checks] == [(50_000, "step_dependency")]
    assert {c.method for c in fast.calls} == {"stream_chat"} and len(fast.calls) == 2
    assert [c.method for c in llm.calls] == ["chat", "chat", "stream_chat"]


async def test_a_small_fast_budget_compacts_inside_the_step(build_context, events):
    """RD.4 + R5.3: the step's own guard enforces the fast budget at every iteration."""
    llm = main_llm(plan(("s1", "dump the log", [])), verdict(True, 0.9), "ok")
    fast = FakeLLM().enqueue(FakeLLM().tool_call("calculator", '{"expression": "2**3999"}'), "ok")
    ctx = build_context(llm, fast_llm=fast, main_budget=60_000, fast_budget=400)
    await run_dag(ctx)
    step_compacts = [c for c in events.of("compact") if c["scope"] == "step"]
    assert step_compacts and step_compacts[0]["step_id"] == "s1"
    assert step_compacts[0]["tokens_after"] <= 400 < step_compacts[0]["tokens_before"]


async def test_follow_ups_reach_the_final_answer(build_context):
    holder = {}

    def step(messages):
        holder["ctx"].injections.put_nowait(ChatMessage(role="user", content="Use metric units."))
        return "10 miles"

    llm = main_llm(plan(("s1", "distance", [])), verdict(True, 0.9), "16 km")
    ctx = holder["ctx"] = build_context(llm, fast_llm=FakeLLM(default=step), query="How far?")
    await run_dag(ctx)
    request = llm.calls[-1].messages[-1]
    assert request.pinned
    assert request.content == "How far?\n\nFollow-ups the user sent meanwhile:\n- Use metric units."


async def test_cancellation_cancels_every_step(build_context):
    started = []
    cancelled = []
    both = asyncio.Event()

    class StuckLLM(FakeLLM):
        async def _next(self, method, messages, tools, opts):
            started.append(task_of(messages))
            if len(started) == 2:
                both.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(task_of(messages))
                raise

    llm = main_llm(plan(("a", "A", []), ("b", "B", []), ("c", "C", ["a"])))
    run = asyncio.create_task(run_dag(build_context(llm, fast_llm=StuckLLM())))
    await asyncio.wait_for(both.wait(), timeout=10)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(run, timeout=10)
    assert sorted(cancelled) == ["A", "B"]
    leftovers = [t for t in asyncio.all_tasks() if re.match(r"dag-step-", t.get_name())]
    assert leftovers == []


async def test_pinned_flags_of_earlier_turns_do_not_block_planner_compaction(build_context):
    """A pin over half the planner's input yields: it is summarised or dropped like any other
    turn, and the request still reaches the planner."""
    history = [
        ChatMessage(role="user", content="stale pinned " + "p" * 80_000, pinned=True),
        ChatMessage(role="assistant", content="ok"),
        ChatMessage(role="user", content="recent note"),
    ]
    llm = main_llm(plan(("s1", "t", [])), verdict(True, 0.9), "ok")
    ctx = build_context(llm, fast_llm=FakeLLM(default=worker), history=history, query="Go.")
    await run_dag(ctx)
    planner_input = llm.calls[0].messages[1].content
    assert "stale pinned" not in planner_input and "recent note" in planner_input
    assert history[0].pinned  # the caller's history is not touched


def test_analyser_input_fits_a_small_main_budget():
    steps = [Step(f"s{i}", f"T{i}") for i in range(4)]
    outcomes = {s.id: StepOutcome("done", f"{s.id} " + "z" * 9_000) for s in steps}
    roomy = analyser_input("request", steps, outcomes, max_tokens=60_000)
    assert roomy == analyser_input("request", steps, outcomes)  # within budget: untouched
    tight = analyser_input("request", steps, outcomes, max_tokens=3_000)
    assert estimate_tokens(tight) <= 3_000
    assert all(f"### Step {s.id}: {s.task}\n{s.id} zzz" in tight for s in steps)


async def test_planner_input_limit_shrinks_with_a_small_main_budget(build_context, events):
    """The planner has no guard (RD.3): with a 4,000-token main budget its input must stay
    within three quarters of it, below the usual 16K."""
    history = [ChatMessage(role="user", content=f"note {i} " + "n" * 2_000) for i in range(8)]
    llm = main_llm(plan(("s1", "t", [])), verdict(True, 0.9), "ok")
    ctx = build_context(
        llm, fast_llm=FakeLLM(default=worker), history=history, main_budget=4_000, query="Go."
    )
    await run_dag(ctx)
    planner_input = llm.calls[0].messages[1].content
    assert estimate_tokens(planner_input) <= 3_000
    assert events.of("compact")[0]["scope"] == "planner"
