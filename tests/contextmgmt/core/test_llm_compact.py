"""CompactUtils.llm_compact (SPEC R2.3, R3.5, R3.7 and the DESIGN §2 rules)."""

import asyncio
import copy
import dataclasses

import pytest

from contextmgmt.core.compact import CompactUtils
from contextmgmt.core.llm import LLMResult, LLMUnavailable, Usage
from contextmgmt.core.messages import IMAGE_NOTES, SUMMARY_PREFIX, ChatMessage
from contextmgmt.core.prompts import COMPACT_PROMPTS, compact_prompt
from contextmgmt.core.tokens import estimate_messages_tokens
from contextmgmt.core.transcript import build_transcript
from tests.support.fake_llm import FakeLLM, Hang

from .builders import assistant, chat_history, problems, system, tool_round, user


def summary_of(result):
    summaries = [m for m in result.messages if m.is_summary]
    assert len(summaries) == 1
    return summaries[0]


async def test_within_budget_returns_strategy_none_without_an_llm_call_r0_3():
    llm = FakeLLM()
    msgs = chat_history(3)
    result = await CompactUtils.llm_compact(msgs, llm, max_tokens=10_000)
    assert result.strategy == "none"
    assert result.messages == msgs
    assert llm.calls == []


async def test_summarises_old_messages_and_keeps_4_recent_verbatim_r2_3():
    msgs = chat_history(6)  # system + 12 messages, 56 tokens each
    llm = FakeLLM(default="They discussed questions 0 to 3.")
    result = await CompactUtils.llm_compact(msgs, llm, max_tokens=600)
    assert result.strategy == "llm"
    assert result.error is None
    # system, summary, then the 4 most recent messages untouched (same objects).
    assert result.messages[0] is msgs[0]
    assert result.messages[2:] == msgs[-4:]
    assert all(a is b for a, b in zip(result.messages[2:], msgs[-4:], strict=True))
    summary = result.messages[1]
    assert summary.role == "system" and summary.content.startswith(SUMMARY_PREFIX)
    assert "They discussed questions 0 to 3." in summary.content
    assert summary.metadata["summarized_count"] == 8
    assert (result.original_count, result.compacted_count) == (13, 6)
    assert result.tokens_before == estimate_messages_tokens(msgs)
    assert result.tokens_after == estimate_messages_tokens(result.messages) <= 600


async def test_compaction_call_is_system_prompt_plus_transcript_r3_5():
    msgs = [
        system("Be brief."),
        user("Where is the report?"),
        assistant("In /srv/reports/q3.pdf, 12 pages."),
        user("u" * 800),
        assistant("a" * 800),
        user("v" * 800),
        assistant("b" * 800),
    ]
    llm = FakeLLM(default="Report at /srv/reports/q3.pdf.")
    await CompactUtils.llm_compact(msgs, llm, max_tokens=830, hint="planner_input")
    (call,) = llm.calls
    assert [m.role for m in call.messages] == ["system", "user"]
    assert call.messages[0].content == compact_prompt("planner_input", call.opts["max_tokens"])
    assert call.messages[0].content.startswith(COMPACT_PROMPTS["planner_input"][:200])
    assert call.messages[1].content.startswith(
        "user: Where is the report?\n\nassistant: In /srv/reports/q3.pdf, 12 pages.\n\n"
    )


async def test_unknown_hint_uses_the_general_prompt():
    llm = FakeLLM(default="summary")
    await CompactUtils.llm_compact(chat_history(6), llm, max_tokens=600, hint="nope")
    call = llm.calls[0]
    assert call.messages[0].content == compact_prompt("general", call.opts["max_tokens"])


async def test_earlier_summary_is_folded_not_piled_up_design_2():
    earlier = ChatMessage(
        role="system",
        content=f"{SUMMARY_PREFIX}\nBudget agreed: 4,500 EUR.",
        metadata={"summarized_count": 10},
    )
    msgs = [chat_history(0)[0], earlier, *chat_history(6)[1:]]
    llm = FakeLLM(default="Budget agreed: 4,500 EUR; questions 0-3 answered.")
    result = await CompactUtils.llm_compact(msgs, llm, max_tokens=600)
    transcript = llm.calls[0].messages[1].content
    assert transcript.startswith(f"system: {SUMMARY_PREFIX}\nBudget agreed: 4,500 EUR.\n\nuser:")
    summary = summary_of(result)
    assert summary is not earlier
    assert summary.metadata["summarized_count"] == 10 + 8
    assert result.summarized_count == 18


async def test_tool_call_pairs_stay_together_at_the_keep_boundary_design_2():
    msgs = [
        system("sys"),
        user("q" * 800),
        assistant("a" * 800),
        user("Find the invoice."),
        *tool_round("c1", "search", '{"q": "invoice"}', "r" * 800),
        *tool_round("c2", "open", '{"id": "INV-7"}', "s" * 800),
        assistant("It is INV-7."),
    ]
    llm = FakeLLM(default="Earlier chat.")
    result = await CompactUtils.llm_compact(msgs, llm, max_tokens=700)
    # The 4 newest messages would start at the c1 result: the call comes along, and as
    # that leads with an assistant turn the boundary moves back to "Find the invoice.".
    assert result.messages[2:] == msgs[3:]
    assert problems(result.messages) == []


async def test_kept_suffix_moves_forward_to_a_user_message_when_it_has_one():
    msgs = [system("sys"), user("q" * 800), assistant("a" * 800), assistant("b" * 800)]
    msgs += [user("latest question"), assistant("latest answer")]
    llm = FakeLLM(default="Earlier chat.")
    result = await CompactUtils.llm_compact(msgs, llm, max_tokens=500)
    assert result.messages[2:] == msgs[-2:]
    assert problems(result.messages) == []


async def test_pinned_messages_are_kept_and_never_summarised_rr_3():
    query = user("What was the total?", pinned=True)
    msgs = [*chat_history(6), query, *tool_round("c1", "calc", '{"e":"2+2"}', "4")]
    llm = FakeLLM(default="summary")
    result = await CompactUtils.llm_compact(msgs, llm, max_tokens=500)
    assert query in result.messages
    assert "What was the total?" not in llm.calls[0].messages[1].content
    assert problems(result.messages) == []


async def test_recent_messages_that_do_not_fit_beside_the_summary_are_summarised_rf_1():
    """The seeds truncate what still does not fit after the summary; fimone summarises it:
    nothing leaves the context unseen by the summariser."""
    msgs = [system("sys"), user("q" * 800), assistant("a" * 800)]
    msgs += [user("u" * 2000), assistant("b" * 2000), user("v" * 40), assistant("c" * 40)]
    llm = FakeLLM(default="summary")
    result = await CompactUtils.llm_compact(msgs, llm, max_tokens=700)
    assert result.strategy == "llm"
    assert result.messages[:2] == [msgs[0], summary_of(result)]
    assert result.messages[2:] == msgs[-2:]  # the 2,000-char pair no longer fits ...
    assert msgs[3] in result.summarized and msgs[4] in result.summarized  # ... summarised
    assert result.tokens_after <= 700


async def test_a_kept_window_over_budget_beside_its_summary_is_folded_in_rf_1():
    """Four recent messages fit only beside a short summary; a long one pushes the oldest
    of them into a second call that folds the summary, never out of the context unseen."""
    msgs = [system("sys"), user("q" * 2400), assistant("a" * 200)]
    msgs += [user("u" * 1600), assistant("b" * 600), user("v" * 40), assistant("c" * 40)]
    llm = FakeLLM().enqueue("word " * 400, "folded")
    result = await CompactUtils.llm_compact(msgs, llm, max_tokens=700)
    assert result.strategy == "llm" and len(llm.calls) == 2
    assert msgs[3] in result.summarized and msgs[4] in result.summarized
    assert result.messages[2:] == msgs[-2:]
    assert summary_of(result).text().endswith("folded")
    assert result.summary_calls == 2
    assert result.tokens_after <= 700


async def test_overlong_summary_is_clipped_to_a_quarter_of_the_budget():
    llm = FakeLLM(default="word " * 5000)
    result = await CompactUtils.llm_compact(chat_history(6), llm, max_tokens=600)
    assert result.strategy == "llm"
    assert estimate_messages_tokens([summary_of(result)]) <= 600 // 4
    assert result.tokens_after <= 600


async def test_usage_of_the_summary_call_is_reported_ru_2():
    class CountingLLM:
        model_name = "counting"

        async def chat(self, messages, **opts):
            return LLMResult(ChatMessage(role="assistant", content="ok"), Usage(321, 12))

    result = await CompactUtils.llm_compact(chat_history(6), CountingLLM(), max_tokens=600)
    assert result.usage == Usage(321, 12)


async def test_key_facts_line_restores_numbers_the_summary_dropped():
    msgs = [
        system("sys"),
        user("Order ORD-58213 ships to https://shop.example.com/track/58213 on 2025-02-14."),
        assistant("Confirmed: 3 parcels, total 1,249.90 EUR."),
        *chat_history(3, filler=2000)[1:],
    ]
    llm = FakeLLM(default="The user placed an order; it was confirmed.")
    result = await CompactUtils.llm_compact(msgs, llm, max_tokens=2000)
    summary = summary_of(result).content
    key_facts = summary.split("Key facts: ", 1)[1]
    # Numbers keep their unit (RF.5); what the user stated comes first, then an amount
    # with its currency before a plain count.
    assert key_facts.split("; ")[:5] == [
        "https://shop.example.com/track/58213",
        "2025-02-14",
        "ORD-58213",
        "1,249.90 EUR",
        "3 parcels",
    ]
    assert (result.facts_missing, result.facts_appended) == (5, 5)


async def test_faithful_summary_gets_no_key_facts_line():
    msgs = [system("sys"), user("Ticket T-1042 costs 1,249.90."), assistant("ok" * 400)]
    msgs += [user("x" * 200), assistant("y" * 200), user("z" * 200), assistant("w" * 200)]
    llm = FakeLLM(default="Ticket T-1042 costs 1249.90.")
    result = await CompactUtils.llm_compact(msgs, llm, max_tokens=400)
    assert "Key facts" not in summary_of(result).content
    assert (result.facts_missing, result.facts_appended) == (0, 0)


class GarbageLLM:
    """Answers with things that are not a usable summary."""

    model_name = "garbage"

    def __init__(self, reply):
        self.reply = reply

    async def chat(self, messages, **opts):
        return self.reply


@pytest.mark.parametrize(
    ("llm", "error_fragment"),
    [
        (FakeLLM().enqueue(LLMUnavailable("connection refused")), "connection refused"),
        (FakeLLM().enqueue(RuntimeError("boom")), "RuntimeError: boom"),
        (FakeLLM().enqueue(""), "empty"),
        (FakeLLM().enqueue("   \n\t "), "empty"),
        (FakeLLM().enqueue(FakeLLM().tool_call("search", "{}")), "empty"),
        (GarbageLLM(None), "empty"),
        (GarbageLLM(42), "empty"),
        (GarbageLLM(LLMResult(ChatMessage("assistant", content=[42]))), "AttributeError"),
    ],
)
async def test_llm_fault_falls_back_to_smart_truncate_r3_7(llm, error_fragment):
    msgs = chat_history(6)
    snapshot = copy.deepcopy(msgs)
    result = await CompactUtils.llm_compact(msgs, llm, max_tokens=600)
    assert result.strategy == "truncate"
    assert error_fragment in result.error
    assert result.messages == CompactUtils.smart_truncate(msgs, 600)
    assert msgs == snapshot


async def test_hang_past_the_timeout_falls_back_r3_7():
    llm = FakeLLM().enqueue(Hang())
    result = await CompactUtils.llm_compact(chat_history(6), llm, max_tokens=600, timeout=0.05)
    assert result.strategy == "truncate"
    assert result.error == "compaction LLM timed out"


async def test_cancellation_of_the_caller_is_not_swallowed():
    llm = FakeLLM().enqueue(Hang())
    task = asyncio.ensure_future(CompactUtils.llm_compact(chat_history(6), llm, 600))
    async with asyncio.timeout(30):  # cancelled while the model is being asked
        while not llm.calls:  # noqa: ASYNC110 - the fake notes the call, then hangs
            await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_no_room_for_a_summary_truncates_without_calling_the_llm():
    msgs = [system("s" * 2000), *chat_history(6)[1:], user("q" * 400, pinned=True)]
    llm = FakeLLM()
    result = await CompactUtils.llm_compact(msgs, llm, max_tokens=600)
    assert llm.calls == []
    assert result.strategy == "truncate" and result.error is None


def test_transcript_marks_images_and_tool_calls():
    msgs = [
        ChatMessage(
            role="user",
            content=[
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        ),
        *tool_round("c1", "vision", '{"detail":"high"}', "a cat"),
    ]
    assert build_transcript(msgs) == (
        "user: What is this?\n[image]\n\n"
        'assistant: [tool call vision({"detail":"high"})]\n\n'
        "tool: a cat"
    )


def test_transcript_gives_images_their_descriptions_when_the_message_has_one_each():
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    notes = ["[image: a.png, 64x64 — a red square]", "[image: b.png, 64x64 — a blue circle]"]
    described = ChatMessage(
        role="user",
        content=[{"type": "text", "text": "Compare these."}, image, image],
        metadata={IMAGE_NOTES: notes},
    )
    assert build_transcript([described]) == "user: Compare these.\n" + "\n".join(notes)
    # A note missing for one of the images: the count, never a note put on the wrong image.
    partly = dataclasses.replace(described, metadata={IMAGE_NOTES: notes[:1]})
    assert build_transcript([partly]) == "user: Compare these.\n[2 images]"
