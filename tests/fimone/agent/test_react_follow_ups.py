"""The ReAct loop and follow-ups the user sends while it runs: taken at the next step,
read after a reply that was streaming, waited for while still loading, and what streamed
kept whole."""

from __future__ import annotations

import asyncio
import json

from contextmgmt.core.messages import ChatMessage
from fimone.agent import Tool, ToolRegistry, default_tools, run_react
from fimone.agent.context import InjectionQueue
from tests.support.fake_llm import FakeLLM


async def test_injection_mid_run_is_pinned_and_seen_next_iteration(build_context, events):
    """RP.1: a follow-up sent while a tool runs reaches the model on the next iteration."""
    holder = {}

    async def slow_lookup() -> str:
        holder["ctx"].injections.put_nowait(
            ChatMessage(role="user", content="Also in euros, please.", metadata={"id": 7})
        )
        return "price: 10 USD"

    tools = ToolRegistry(
        [Tool("lookup", "price", {"type": "object", "properties": {}}, slow_lookup)]
    )
    llm = FakeLLM().enqueue(FakeLLM().tool_call("lookup", "{}", "l1"), "10 USD, about 9.20 EUR.")
    ctx = holder["ctx"] = build_context(llm, tools=tools, query="What does it cost?")
    await run_react(ctx)

    sent = llm.calls[1].messages
    injected = sent[-1]
    assert (injected.content, injected.pinned, injected.injected) == (
        "Also in euros, please.",
        True,
        True,
    )
    assert sent[-2].role == "tool"  # after the tool result, pairs intact
    assert injected.metadata == {"id": 7}
    assert "injected" not in events.names()  # the chat layer already announced it


async def test_injection_arriving_while_the_model_answers_is_not_lost(build_context, events):
    """A follow-up arriving while the model wrote its answer: the model reads it next, and
    the reply the user watched stream stays in the answer, ahead of the new one."""
    holder = {}

    def draft(messages):
        holder["ctx"].injections.put_nowait(ChatMessage(role="user", content="And in German?"))
        return "Draft answer."

    llm = FakeLLM().enqueue(draft, "Final answer, auch auf Deutsch.")
    ctx = holder["ctx"] = build_context(llm, query="Say hello.")
    outcome = await run_react(ctx)

    assert outcome.answer == "Draft answer.\n\nFinal answer, auch auf Deutsch."
    sent = llm.calls[1].messages
    assert [(m.role, m.text()) for m in sent[-2:]] == [
        ("assistant", "Draft answer."),
        ("user", "And in German?"),
    ]
    assert events.of("answer.retract") == []
    assert not [s for s in events.of("step") if s["kind"] == "thought"]
    # What streamed is what is stored.
    assert events.answer_text() == outcome.answer


class SettlingWatched(InjectionQueue):
    """The run's queue, telling when the run first waits for follow-ups still loading."""

    def __init__(self) -> None:
        super().__init__()
        self.settling = asyncio.Event()

    async def drain_settled(self, wait: float) -> list[ChatMessage]:
        self.settling.set()
        return await super().drain_settled(wait)


async def test_a_follow_up_still_loading_when_the_answer_ends_is_taken_by_the_run(
    build_context, events
):
    """Announced while the model wrote, its row still being read (a busy server's database
    hop): the run waits for it rather than ending, and the model reads it next."""
    holder = {}
    injections = SettlingWatched()

    async def arrive_later():
        # Loaded only once the run, its answer written, waits for what is still loading.
        await asyncio.wait_for(injections.settling.wait(), 30)
        injections.put_nowait(ChatMessage(role="user", content="And in German?"))
        injections.expected_done()

    def draft(messages):
        injections.expect()
        holder["late"] = asyncio.get_running_loop().create_task(arrive_later())
        return "Draft answer."

    llm = FakeLLM().enqueue(draft, "Final answer, auch auf Deutsch.")
    ctx = build_context(llm, query="Say hello.", injections=injections)
    outcome = await run_react(ctx)

    assert outcome.answer == "Draft answer.\n\nFinal answer, auch auf Deutsch."
    assert [(m.role, m.text()) for m in llm.calls[1].messages[-2:]] == [
        ("assistant", "Draft answer."),
        ("user", "And in German?"),
    ]


async def test_a_long_reply_interrupted_by_a_follow_up_is_kept_whole(build_context, events):
    """An essay far longer than any preview, then a follow-up: nothing of it is cut."""
    essay = "\n\n".join(f"Paragraph {i}: " + "words " * 60 for i in range(20)).strip()
    assert len(essay) > 6_000
    holder = {}

    def long_reply(messages):
        holder["ctx"].injections.put_nowait(ChatMessage(role="user", content="Shorter?"))
        return essay

    llm = FakeLLM().enqueue(long_reply, "In short: words.")
    ctx = holder["ctx"] = build_context(llm, query="Write an essay.")
    outcome = await run_react(ctx)

    assert outcome.answer == essay + "\n\nIn short: words."
    assert events.answer_text() == outcome.answer


async def test_a_kept_part_then_a_tool_call_retracts_only_the_new_text(build_context, events):
    """After a kept reply, a reply that calls a tool gives back only its own text (with the
    blank line before it), and the answer that follows is again set apart by a blank line."""
    holder = {}

    def draft(messages):
        holder["ctx"].injections.put_nowait(ChatMessage(role="user", content="Add 2+3."))
        return "First part."

    thinking = ChatMessage(
        role="assistant",
        content="Let me compute.",
        tool_calls=FakeLLM()
        .tool_call("calculator", json.dumps({"expression": "2+3"}), "c1")
        .tool_calls,
    )
    llm = FakeLLM().enqueue(draft, thinking, "2+3 = 5.")
    ctx = holder["ctx"] = build_context(llm, tools=default_tools(), query="Hi.")
    outcome = await run_react(ctx)

    assert outcome.answer == "First part.\n\n2+3 = 5."
    retract = events.of("answer.retract")
    assert [(r["chars"], r["text"]) for r in retract] == [
        (len("\n\nLet me compute."), "Let me compute.")
    ]
    assert events.answer_text() == outcome.answer
