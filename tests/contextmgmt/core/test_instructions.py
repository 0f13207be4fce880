"""The instructions tier (contextmgmt/core/instructions.py): counted first, never
compacted, never masked, and the summariser is told it is kept elsewhere (RJ.2)."""

from __future__ import annotations

import pytest

from contextmgmt.core.compact import CompactUtils
from contextmgmt.core.guard import ContextGuard
from contextmgmt.core.instructions import (
    INSTRUCTIONS_PREFIX,
    NoRoomForQuery,
    check_room,
    instructions_message,
    instructions_tokens,
    is_instructions,
    with_instructions,
)
from contextmgmt.core.masking import MASK_PREFIX
from contextmgmt.core.prompts import INSTRUCTIONS_KEPT, compact_prompt, hint_of
from contextmgmt.core.tokens import estimate_message_tokens
from tests.support.fake_llm import FakeLLM

from .builders import assistant, chat_history, system, tool_round, user

RULES = "Answer in German. End every answer with '— Your assistant'. Budget code: KX-4471."


def conversation_with_instructions(turns: int = 8) -> list:
    """System prompt, the instructions, then long turns with a tool round in each."""
    messages = with_instructions(system(), RULES)
    for i in range(turns):
        messages.append(user(f"question {i} " + "q " * 300))
        messages.extend(
            tool_round(f"c{i}", "read_log", f'{{"n": {i}}}', f"log {i}: " + "line " * 400)
        )
        messages.append(assistant(f"answer {i} " + "a " * 300))
    messages.append(user("And now?", pinned=True))
    return messages


def test_the_instructions_message_is_marked_and_counted_rj_2():
    message = instructions_message(RULES)
    assert message is not None and is_instructions(message)
    assert message.role == "system" and message.text().startswith(INSTRUCTIONS_PREFIX)
    assert RULES in message.text()
    assert instructions_tokens(RULES) == estimate_message_tokens(message)
    assert instructions_message("  ") is None and instructions_tokens("") == 0
    assert with_instructions(system(), "") == [system()]


async def test_the_guard_keeps_instructions_whole_and_the_summariser_never_reads_them_rj_2():
    """Over budget: tool results are masked, then old turns summarised; the instructions
    stay as they were, right after the system prompt, and no summariser call carries them
    — its prompt says they are kept elsewhere."""
    messages = conversation_with_instructions()
    llm = FakeLLM(default="The user asked eight questions about the logs.")
    guard = ContextGuard(compact_llm=llm, budget=1_200)
    fitted = await guard.check_and_compact(messages)
    assert guard.last is not None and guard.last.strategy == "llm"
    assert fitted[1] is messages[1] and is_instructions(fitted[1])
    assert [m for m in fitted if is_instructions(m)] == [messages[1]]
    assert llm.calls, "the old turns were summarised"
    for call in llm.calls:
        sent = "\n".join(m.text() for m in call.messages)
        assert RULES not in sent and INSTRUCTIONS_PREFIX not in sent
        assert INSTRUCTIONS_KEPT in call.messages[0].text()
        assert hint_of(call.messages[0].text()) == "general"


async def test_masking_never_touches_the_instructions_rj_2():
    messages = conversation_with_instructions(turns=4)
    guard = ContextGuard(compact_llm=None, budget=4_000)
    fitted = await guard.check_and_compact(messages)
    assert any(m.role == "tool" and m.text().startswith(MASK_PREFIX) for m in fitted)
    assert fitted[1] is messages[1]


async def test_llm_compact_without_instructions_keeps_its_prompt_as_it_was():
    llm = FakeLLM(default="Summary.")
    await CompactUtils.llm_compact(chat_history(6), llm, max_tokens=600)
    assert INSTRUCTIONS_KEPT not in llm.calls[0].messages[0].text()
    assert llm.calls[0].messages[0].text() == compact_prompt(
        "general", llm.calls[0].opts["max_tokens"]
    )


def test_a_prompt_that_says_instructions_are_kept_is_still_known_by_its_hint_rj_2():
    for hint in ("general", "react_iteration", "planner_input", "step_dependency"):
        prompt = compact_prompt(hint, 300, instructions=True)
        assert INSTRUCTIONS_KEPT in prompt and hint_of(prompt) == hint
        assert INSTRUCTIONS_KEPT in compact_prompt(hint, instructions=True)


def test_instructions_that_leave_no_room_for_the_question_are_refused_rj_2():
    check_room(1_000, instructions=0, fixed=5_000)  # no instructions: not ours to refuse
    check_room(1_000, instructions=600, fixed=400)
    with pytest.raises(NoRoomForQuery) as raised:
        check_room(1_000, instructions=900, fixed=200)
    assert raised.value.instructions == 900 and raised.value.budget == 1_000
    assert "900" in str(raised.value) and "1,000" in str(raised.value)
