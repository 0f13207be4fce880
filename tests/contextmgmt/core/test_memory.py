"""Layer-1 memories (SPEC R1.1–R1.3): one contract run against each, then their specifics."""

import pytest

from contextmgmt.core.llm import LLMUnavailable
from contextmgmt.core.memory import BaseMemory, SummaryMemory, WindowMemory
from contextmgmt.core.messages import SUMMARY_PREFIX, ChatMessage
from contextmgmt.core.prompts import compact_prompt
from tests.support.fake_llm import FakeLLM

from .builders import assistant, problems, system, tool_round, user

# Each factory builds an empty memory large enough that the contract's 6 messages fit.
MEMORY_FACTORIES = {
    "window": lambda: WindowMemory(max_messages=10),
    "summary": lambda: SummaryMemory(FakeLLM(), threshold=10, keep_recent=4),
}


@pytest.fixture(params=sorted(MEMORY_FACTORIES))
def empty_memory(request) -> BaseMemory:
    return MEMORY_FACTORIES[request.param]()


def short_conversation() -> list[ChatMessage]:
    return [
        system("rules"),
        user("hi"),
        assistant("hello"),
        *tool_round("c1", "clock", "{}", "12:00"),
        assistant("It is noon."),
    ]


async def test_contract_is_a_base_memory_r1_1(empty_memory):
    assert isinstance(empty_memory, BaseMemory)
    assert await empty_memory.get_messages() == []


async def test_contract_returns_added_messages_in_order_r1_1(empty_memory):
    for msg in short_conversation():
        await empty_memory.add_message(msg)
    assert await empty_memory.get_messages() == short_conversation()


async def test_contract_returns_a_new_list_each_time_r1_1(empty_memory):
    await empty_memory.add_message(user("hi"))
    first = await empty_memory.get_messages()
    first.append(user("sneaked in"))
    assert await empty_memory.get_messages() == [user("hi")]


async def test_contract_clear_forgets_everything_r1_1(empty_memory):
    for msg in short_conversation():
        await empty_memory.add_message(msg)
    await empty_memory.clear()
    assert await empty_memory.get_messages() == []
    await empty_memory.add_message(user("again"))
    assert await empty_memory.get_messages() == [user("again")]


async def test_contract_keeps_system_messages_first_r1_1(empty_memory):
    await empty_memory.add_message(user("hi"))
    await empty_memory.add_message(system("late rules"))
    assert await empty_memory.get_messages() == [system("late rules"), user("hi")]


def test_abstract_memory_cannot_be_instantiated_r1_1():
    with pytest.raises(TypeError):
        BaseMemory()


async def test_window_keeps_the_last_n_non_system_messages_r1_2():
    memory = WindowMemory(max_messages=3)
    await memory.add_message(system("rules"))
    for i in range(6):
        await memory.add_message(user(f"m{i}"))
    assert [m.content for m in await memory.get_messages()] == ["rules", "m3", "m4", "m5"]


async def test_window_never_starts_with_a_tool_result_cut_from_its_call_r1_2():
    memory = WindowMemory(max_messages=3)
    for msg in [user("q"), *tool_round("c1", "f", "{}", "r1"), assistant("a"), user("next")]:
        await memory.add_message(msg)
    out = await memory.get_messages()  # the window is [tool r1, assistant a, user next]
    assert [m.content for m in out] == ["a", "next"]


async def test_summary_memory_summarises_past_the_threshold_r1_3():
    llm = FakeLLM(default="They greeted and counted to 3.")
    memory = SummaryMemory(llm, threshold=6, keep_recent=2)
    await memory.add_message(system("rules"))
    for i in range(6):
        await memory.add_message(user(f"u{i}") if i % 2 == 0 else assistant(f"a{i}"))
    assert llm.calls == []  # 6 messages: not past the threshold
    await memory.add_message(user("u6"))
    out = await memory.get_messages()
    assert len(llm.calls) == 1
    cap = llm.calls[0].opts["max_tokens"]
    assert llm.calls[0].messages[0].content == compact_prompt("general", cap)
    assert out[0] == system("rules")
    assert out[1].role == "system" and out[1].content.startswith(SUMMARY_PREFIX)
    # keep_recent=2 would keep [a5, u6]; a kept part must not lead with the assistant.
    assert out[2:] == [user("u6")]
    assert out[1].metadata["summarized_count"] == 6
    assert problems(out) == []
    assert memory.usage.input_tokens > 0


async def test_summary_memory_folds_its_earlier_summary_r1_3():
    llm = FakeLLM(default=lambda msgs: f"summary #{len(llm.calls)}")
    memory = SummaryMemory(llm, threshold=4, keep_recent=2)
    for i in range(10):
        await memory.add_message(user(f"u{i}") if i % 2 == 0 else assistant(f"a{i}"))
    out = await memory.get_messages()
    summaries = [m for m in out if m.is_summary]
    assert len(summaries) == 1
    assert len(llm.calls) == 2
    assert f"system: {SUMMARY_PREFIX}\nsummary #1" in llm.calls[1].messages[1].content


async def test_summary_memory_keeps_messages_when_the_llm_fails_r1_3():
    llm = FakeLLM().enqueue(LLMUnavailable("down"))
    memory = SummaryMemory(llm, threshold=2, keep_recent=1)
    for msg in [user("u0"), assistant("a0"), user("u1")]:
        await memory.add_message(msg)
    assert [m.content for m in await memory.get_messages()] == ["u0", "a0", "u1"]
    assert "down" in memory.last_error


async def test_summary_memory_waits_for_a_pending_tool_result():
    llm = FakeLLM(default="summary")
    memory = SummaryMemory(llm, threshold=3, keep_recent=1)
    call, result = tool_round("c1", "f", "{}", "r")
    for msg in [user("u0"), assistant("a0"), user("u1"), call]:
        await memory.add_message(msg)
    assert llm.calls == []  # past the threshold, but the call has no result yet
    await memory.add_message(result)
    assert len(llm.calls) == 1
    out = await memory.get_messages()
    assert out[1:] == [user("u1"), call, result]
    assert problems(out) == []


@pytest.mark.parametrize(("threshold", "keep_recent"), [(0, 0), (4, 4), (4, -1)])
def test_summary_memory_rejects_impossible_settings(threshold, keep_recent):
    with pytest.raises(ValueError):
        SummaryMemory(FakeLLM(), threshold=threshold, keep_recent=keep_recent)
