"""ReAct engine (SPEC RR, RP, R3.1, RS.1) with the scripted FakeLLM."""

from __future__ import annotations

import asyncio
import json

import pytest

from contextmgmt.core.guard import ContextGuard
from contextmgmt.core.llm import ContextOverflow, LLMTimeout, LLMUnavailable
from contextmgmt.core.messages import SUMMARY_PREFIX, ChatMessage
from contextmgmt.core.prompts import compact_prompt
from contextmgmt.core.tokens import estimate_messages_tokens, estimate_tokens
from fimone.agent import Tool, ToolRegistry, default_tools, run_react
from fimone.agent.loop import LoopConfig, ReactLoop
from fimone.agent.prompts import LIMIT_NOTE, REACT_SYSTEM, limit_preface
from tests.support.fake_llm import FakeLLM, Hang, _estimate


class HangingLLM(FakeLLM):
    """A stream that never yields; ``entered`` is set once a call is in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = asyncio.Event()

    async def stream_chat(self, messages, *, tools=None, **opts):
        self.entered.set()
        await asyncio.Event().wait()
        yield  # pragma: no cover - never reached


def calc(llm: FakeLLM, expression: str, call_id: str) -> ChatMessage:
    return llm.tool_call("calculator", json.dumps({"expression": expression}), call_id)


def chatty_history(pairs: int, chars: int = 400) -> list[ChatMessage]:
    history = []
    for i in range(pairs):
        history.append(ChatMessage(role="user", content=f"question {i}: " + "q" * chars))
        history.append(ChatMessage(role="assistant", content=f"answer {i}: " + "a" * chars))
    return history


def big_tool(text: str) -> Tool:
    async def dump() -> str:
        return text

    return Tool("dump", "returns a big text", {"type": "object", "properties": {}}, dump)


async def test_tool_loop_runs_tools_and_answers(build_context, events):
    """RR: the model calls the calculator, reads the result, answers."""
    llm = FakeLLM().enqueue(calc(FakeLLM(), "6*7", "c1"), "6 times 7 is 42.")
    outcome = await run_react(build_context(llm))

    assert outcome.answer == "6 times 7 is 42."
    assert outcome.status == "done"
    assert outcome.iterations == 2
    first, second = llm.calls
    assert first.tools == default_tools().openai_tools()
    assert first.messages[0].content == REACT_SYSTEM
    tool_msg = second.messages[-1]
    assert (tool_msg.role, tool_msg.tool_call_id, tool_msg.content) == ("tool", "c1", "42")
    assert second.messages[-2].tool_calls[0].id == "c1"
    assert [(p["kind"], p.get("call_id")) for p in events.of("step")] == [
        ("tool_call", "c1"),
        ("tool_result", "c1"),
    ]
    assert events.of("step")[0] == {
        "iteration": 1,
        "kind": "tool_call",
        "name": "calculator",
        "arguments": '{"expression": "6*7"}',
        "call_id": "c1",
    }
    assert events.of("step")[1]["result"] == "42"
    assert events.answer_text() == outcome.answer
    assert outcome.usage.input_tokens == sum(_estimate(c.messages) for c in llm.calls)
    assert outcome.compaction_usage.input_tokens == 0


async def test_parallel_tool_calls_in_one_reply_all_get_results(build_context):
    reply = ChatMessage(
        role="assistant",
        content="Let me compute both.",
        tool_calls=[
            calc(FakeLLM(), "1+1", "a").tool_calls[0],
            calc(FakeLLM(), "2+2", "b").tool_calls[0],
        ],
    )
    llm = FakeLLM().enqueue(reply, "2 and 4")
    await run_react(build_context(llm))
    sent = llm.calls[1].messages
    assert [(m.tool_call_id, m.content) for m in sent if m.role == "tool"] == [
        ("a", "2"),
        ("b", "4"),
    ]


async def test_text_before_a_tool_call_streams_then_moves_into_the_step(build_context, events):
    """RS.1: the pre-tool text streams as it comes, then answer.retract moves it into the
    step as a thought; the answer holds only the answer."""
    reply = calc(FakeLLM(), "2**8", "t1")
    reply.content = "I will compute the power."
    llm = FakeLLM().enqueue(reply, "It is 256.")
    outcome = await run_react(build_context(llm))
    names = events.names()
    first_retract = names.index("answer.retract")
    assert "answer.delta" in names[:first_retract]
    assert names[first_retract + 1] == "step"  # the tool call comes after the move
    assert events.of("answer.retract") == [
        {
            "iteration": 1,
            "chars": len("I will compute the power."),
            "text": "I will compute the power.",
        }
    ]
    assert [s["kind"] for s in events.of("step")] == ["tool_call", "tool_result"]
    assert events.answer_text() == outcome.answer == "It is 256."


async def test_a_tool_call_without_text_retracts_nothing(build_context, events):
    llm = FakeLLM().enqueue(calc(FakeLLM(), "2**8", "t1"), "256.")
    await run_react(build_context(llm))
    assert events.of("answer.retract") == []


async def test_a_step_sub_agent_reports_its_thought_as_a_step(build_context, events):
    """Inside a DAG step nothing streams as answer: the thought is a plain step event."""
    reply = calc(FakeLLM(), "2**8", "t1")
    reply.content = "I will compute the power."
    progress: list[str] = []

    async def on_progress(text: str) -> None:
        progress.append(text)

    ctx = build_context(FakeLLM().enqueue(reply, "256"))
    loop = ReactLoop(
        LoopConfig(
            llm=ctx.llm,
            guard=ContextGuard(budget=60_000),
            budget=60_000,
            tools=ctx.tools,
            sink=events,
            stream=False,
            on_progress=on_progress,
            event_extra={"step_id": "s1"},
        )
    )
    result = await loop.run([ChatMessage(role="user", content="2**8?", pinned=True)])
    assert result.answer == "256"
    assert "".join(progress) == "I will compute the power.256"
    assert events.of("step")[0] == {
        "iteration": 1,
        "kind": "thought",
        "text": "I will compute the power.",
        "step_id": "s1",
    }
    assert "answer.delta" not in events.names() and "answer.retract" not in events.names()


async def test_tool_result_preview_in_events_is_cut(build_context, events):
    tools = ToolRegistry([big_tool("x" * 5_000)])
    llm = FakeLLM().enqueue(FakeLLM().tool_call("dump", "{}", "d1"), "done")
    await run_react(build_context(llm, tools=tools))
    result = events.of("step")[1]["result"]
    assert result.startswith("x" * 2_000) and "3,000 more chars" in result
    assert llm.calls[1].messages[-1].content == "x" * 5_000  # the model gets it whole


async def test_the_tool_free_reply_is_the_streamed_answer_asked_once(build_context, events):
    """RS.1: the iteration that answers without tools is the answer, streamed as it came
    (word by word here), never asked for a second time."""
    llm = FakeLLM().enqueue("Paris is the capital of France.")
    outcome = await run_react(build_context(llm, query="Capital of France?"))
    assert [c.method for c in llm.calls] == ["stream_chat"]
    assert llm.calls[0].tools  # with the tools: the model could have called one
    assert len(events.of("answer.delta")) == 6
    assert events.answer_text() == outcome.answer == "Paris is the capital of France."


async def test_empty_reply_is_written_by_a_tool_free_stream(build_context, events):
    """An empty tool-free reply is no answer: one more streamed call without tools."""
    llm = FakeLLM().enqueue(calc(FakeLLM(), "6*7", "c1"), "", "The result is 42 exactly.")
    outcome = await run_react(build_context(llm))
    assert [c.method for c in llm.calls] == ["stream_chat"] * 3
    assert llm.calls[2].tools is None
    deltas = [p["text"] for p in events.of("answer.delta")]
    assert len(deltas) == 5  # word by word, as the model streamed it
    assert "".join(deltas) == outcome.answer == "The result is 42 exactly."
    assert outcome.usage.input_tokens == sum(_estimate(c.messages) for c in llm.calls)


async def test_history_summary_is_kept_and_query_is_pinned(build_context):
    """RR.3 and DESIGN §2: the load-time summary reaches the model; the query is pinned."""
    summary = ChatMessage(role="system", content=f"{SUMMARY_PREFIX}\nThe dog is named Bruno.")
    old_query = ChatMessage(role="user", content="earlier", pinned=True)
    history = [summary, old_query, ChatMessage(role="assistant", content="noted")]
    llm = FakeLLM().enqueue("Bruno.")
    await run_react(build_context(llm, history=history, query="What is my dog called?"))

    sent = llm.calls[0].messages
    assert [m.role for m in sent] == ["system", "system", "user", "assistant", "user"]
    assert sent[1].content == summary.content
    assert sent[-1].content == "What is my dog called?"
    assert sent[-1].pinned and not sent[-1].injected
    # The user's earlier pin stays verbatim but may yield (like a follow-up): it is not a
    # second current query.
    assert sent[2].pinned and sent[2].injected and not sent[2].is_current_query
    assert [m.is_current_query for m in sent].count(True) == 1
    assert old_query.pinned and not old_query.injected  # the caller's history is untouched


async def test_custom_system_prompt(build_context):
    llm = FakeLLM().enqueue("hi")
    await run_react(build_context(llm, system_prompt="Be terse."))
    assert llm.calls[0].messages[0].content == "Be terse."


async def test_guard_runs_every_iteration_with_main_budget_and_hint(build_context, spy_guards):
    """R3.1: the guard is called at the top of every iteration, react_iteration, main budget
    less the tool schemas sent beside the messages (RF.3)."""
    compact = FakeLLM()
    llm = FakeLLM().enqueue(
        calc(FakeLLM(), "1+1", "a"), calc(FakeLLM(), "2+2", "b"), calc(FakeLLM(), "3+3", "c"), "6"
    )
    ctx = build_context(llm, main_budget=30_000, fast_budget=5_000, compact_llm=compact)
    await run_react(ctx)
    (guard,) = spy_guards
    schemas = estimate_tokens(json.dumps(ctx.tools.openai_tools(), ensure_ascii=False))
    assert schemas > 0
    assert guard.budget == 30_000 - schemas and guard.compact_llm is compact
    assert [c["hint"] for c in guard.checks] == ["react_iteration"] * 4
    assert [c["budget"] for c in guard.checks] == [30_000 - schemas] * 4
    assert [c["count"] for c in guard.checks] == [2, 4, 6, 8]


async def test_pinned_query_survives_an_overflowing_tool_output(build_context, events):
    """RR.3, R3.2: a runaway tool output is cut and compacted away; the query stays."""
    query = "Summarise the dump for ticket FX-4411."
    tools = ToolRegistry([big_tool("line of log output\n" * 20_000)])  # 380,000 chars
    llm = FakeLLM().enqueue(FakeLLM().tool_call("dump", "{}", "d1"), "It is a log.")
    outcome = await run_react(build_context(llm, tools=tools, main_budget=4_000, query=query))

    sent = llm.calls[1].messages
    assert sent[-1].content == query or any(m.content == query and m.pinned for m in sent)
    assert estimate_messages_tokens(sent) <= 4_000
    assert all(len(m.text()) <= 50_000 + len("\n[Truncated]") for m in sent)
    (compact,) = events.of("compact")
    # The model has not read the output yet: it is cut to the room left, never dropped,
    # and says how to read on (RT.1).
    assert compact["scope"] == "iteration" and compact["strategy"] == "mask"
    assert compact["tokens_before"] > 4_000 >= compact["tokens_after"]
    assert outcome.compactions == [compact]
    (dump,) = [m for m in sent if m.role == "tool"]
    assert dump.text().startswith("line of log output\n")
    assert 'read on with recall(id="d1", start=' in dump.text()


async def test_llm_compaction_in_the_loop_counts_as_compaction_usage(build_context, events):
    compact_llm = FakeLLM(default="The user asked many questions; nothing else matters.")
    llm = FakeLLM().enqueue("fine")
    ctx = build_context(llm, history=chatty_history(30), main_budget=4_000, compact_llm=compact_llm)
    outcome = await run_react(ctx)

    call = compact_llm.calls[0]
    assert call.messages[0].content == compact_prompt("react_iteration", call.opts["max_tokens"])
    assert events.of("compact")[0]["strategy"] == "llm"
    # Every summariser call of the compaction (rounds included) is accounted to the run.
    assert outcome.compaction_usage.input_tokens == sum(
        _estimate(c.messages) for c in compact_llm.calls
    )
    assert outcome.usage.input_tokens == _estimate(llm.calls[0].messages)


async def test_compaction_failure_never_reaches_the_agent(build_context, events):
    """R3.7: a failing compaction LLM falls back to truncation; the run goes on."""
    compact_llm = FakeLLM(default=LLMUnavailable("compactor down"))
    llm = FakeLLM().enqueue("still fine")
    ctx = build_context(llm, history=chatty_history(30), main_budget=4_000, compact_llm=compact_llm)
    outcome = await run_react(ctx)
    assert outcome.answer == "still fine"
    assert events.of("compact")[0]["strategy"] == "truncate"


async def test_context_overflow_forces_one_compaction_and_a_retry(build_context, events):
    """The provider disagreed with our estimate: compact to half and retry once."""
    llm = FakeLLM().enqueue(ContextOverflow("maximum context length exceeded"), "ok")
    history = chatty_history(20)
    outcome = await run_react(build_context(llm, history=history, main_budget=60_000))

    first, retry = llm.calls
    assert outcome.answer == "ok"
    before = estimate_messages_tokens(first.messages)
    assert estimate_messages_tokens(retry.messages) <= before // 2
    assert retry.messages[-1].content == "What is 6 times 7?" and retry.messages[-1].pinned
    (compact,) = events.of("compact")
    assert compact["scope"] == "iteration" and compact["tokens_before"] == before


async def test_a_second_context_overflow_propagates(build_context):
    llm = FakeLLM().enqueue(ContextOverflow("too long"), ContextOverflow("still too long"))
    with pytest.raises(ContextOverflow):
        await run_react(build_context(llm, history=chatty_history(20)))
    assert len(llm.calls) == 2


async def test_other_llm_errors_propagate(build_context):
    llm = FakeLLM().enqueue(calc(FakeLLM(), "1+1", "a"), LLMUnavailable("503"))
    with pytest.raises(LLMUnavailable):
        await run_react(build_context(llm))


async def test_llm_timeout_becomes_llm_timeout_error(build_context):
    llm = FakeLLM().enqueue(Hang())
    with pytest.raises(LLMTimeout):
        await run_react(build_context(llm, llm_timeout=0.01))


async def test_iteration_limit_ends_with_an_honest_answer(build_context, events):
    llm = FakeLLM().enqueue(
        calc(FakeLLM(), "1+1", "a"), calc(FakeLLM(), "2+2", "b"), "So far: 2 and 4."
    )
    outcome = await run_react(build_context(llm, max_iterations=2))

    assert outcome.status == "limit"
    assert outcome.iterations == 2
    assert outcome.answer == limit_preface(2) + "So far: 2 and 4."
    assert outcome.answer.startswith("I stopped after 2 steps")
    final = llm.calls[-1]
    assert final.method == "stream_chat" and final.tools is None
    assert final.messages[-1].content == LIMIT_NOTE.format(steps=2)
    assert [m.content for m in final.messages if m.role == "tool"] == ["2", "4"]
    assert events.answer_text() == outcome.answer


async def test_cancellation_during_an_llm_call_propagates(build_context):
    llm = HangingLLM()
    task = asyncio.create_task(run_react(build_context(llm)))
    await llm.entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=10)  # a fail-safe, not a timing assertion


async def test_cancellation_during_a_tool_run_propagates(build_context):
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def stuck() -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()
        return "never"

    tools = ToolRegistry([Tool("stuck", "never ends", {"type": "object", "properties": {}}, stuck)])
    llm = FakeLLM().enqueue(FakeLLM().tool_call("stuck", "{}", "s1"))
    task = asyncio.create_task(run_react(build_context(llm, tools=tools)))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=10)
    assert cancelled.is_set()


async def test_unknown_tool_and_bad_arguments_are_results_the_model_reads(build_context):
    llm = FakeLLM().enqueue(FakeLLM().tool_call("weather", '{"city": "Oslo"}', "w1"), "Sorry.")
    await run_react(build_context(llm))
    assert llm.calls[1].messages[-1].content.startswith("Error: unknown tool 'weather'")


async def test_a_users_pin_is_not_summarised_by_the_guard_within_the_run_rv_2(build_context):
    """A pinned history message stays verbatim through the run's own compactions while pins
    take at most half the budget; unpinned turns around it are summarised."""
    pin = ChatMessage(role="user", content="Keep this: the vault code is 7391.", pinned=True)
    history = [
        ChatMessage(role="user", content="old: " + "the build fails on the login page " * 120),
        ChatMessage(role="assistant", content="ok: " + "the retry loop never stops " * 120),
        pin,
        ChatMessage(role="assistant", content="Noted."),
        ChatMessage(role="user", content="more: " + "check the config values again " * 120),
        ChatMessage(role="assistant", content="fine: " + "the token expires early " * 120),
    ]
    llm = FakeLLM().enqueue("The code is 7391.")
    summariser = FakeLLM(default="Earlier: chatter.")
    await run_react(
        build_context(
            llm,
            history=history,
            query="What was the code?",
            main_budget=3_000,
            compact_llm=summariser,
        )
    )

    assert summariser.calls, "the history had to be compacted"
    summarised = "\n".join(m.text() for c in summariser.calls for m in c.messages)
    assert "vault code is 7391" not in summarised
    sent = llm.calls[0].messages
    assert any(m.content == pin.content and m.pinned for m in sent)
