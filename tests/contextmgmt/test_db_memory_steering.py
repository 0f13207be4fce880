"""DbMemory with pins, edited and discarded summaries (SPEC RV.2, RV.3, R3.8).

A pinned history message stays verbatim outside the summary while pinned history fits in
half the budget; the oldest pins yield first. What a summary covers is recorded from the
messages the summariser saw, so a pin in the middle of the history is loaded again next
time. An edited summary is used as it is; a discarded one makes the next load summarise
the original messages afresh.
"""

from __future__ import annotations

from dataclasses import asdict

import pytest
from asgiref.sync import async_to_sync

from chat import services
from chat.compaction.summaries import summary_latest, summary_save
from chat.models import Message
from contextmgmt.core.compact import CompactUtils
from contextmgmt.core.messages import SUMMARY_PREFIX
from contextmgmt.db_memory import DbMemory
from tests.support.factories import add_message
from tests.support.fake_llm import FakeLLM


def turns(conversation, n: int, *, tag: str = "", words: int = 30) -> list[Message]:
    rows = []
    for i in range(n):
        rows.append(add_message(conversation, "user", f"{tag}Q{i}: " + "lorem ipsum " * words))
        rows.append(add_message(conversation, "assistant", f"{tag}A{i}: " + "dolor sit " * words))
    return rows


def ask(conversation, text: str = "current question") -> Message:
    return add_message(conversation, "user", text, status="pending")


def answer_current(conversation) -> None:
    Message.objects.filter(conversation=conversation, status="pending").update(status="done")


def load(memory: DbMemory):
    return async_to_sync(memory.get_messages)()


def persist(conversation, memory: DbMemory):
    return summary_save(conversation_id=conversation.id, **asdict(memory.last.new_summary))


def ids(messages) -> list:
    return [m.metadata.get("id") for m in messages if not m.is_summary]


def transcript(llm: FakeLLM) -> str:
    return "\n".join(call.messages[-1].text() for call in llm.calls)


pytestmark = pytest.mark.django_db


# --- RV.2 pins and coverage -------------------------------------------------------------------


def test_rv2_mid_history_pin_is_kept_verbatim_and_recorded_as_uncovered(conversation):
    rows = turns(conversation, 20)
    pinned = rows[6]  # Q3, in the middle of what gets summarised
    services.message_pin_set(message=pinned, pinned=True)
    ask(conversation)
    llm = FakeLLM(default="The user asked about lorem ipsum.")
    memory = DbMemory(conversation.id, 600, compact_llm=llm, keep_recent=4)
    messages = load(memory)

    assert memory.last.strategy == "llm"
    kept = [m for m in messages if m.metadata.get("id") == pinned.pk]
    assert len(kept) == 1 and kept[0].content == pinned.content and kept[0].pinned
    assert "Q3:" not in transcript(llm) and "Q2:" in transcript(llm)
    assert memory.last.pins_kept == (pinned.pk,) and memory.last.pins_yielded == ()
    new = memory.last.new_summary
    # Covers through the newest summarised message; the pin before it is uncovered.
    assert new.covers_through_id == rows[-5].pk
    assert new.uncovered_ids == [pinned.pk]
    assert new.covered_count == 36 - 1  # 40 history messages, 4 kept recent, 1 pinned


def test_rv2_next_load_brings_the_uncovered_pin_back_without_an_llm_call(conversation):
    rows = turns(conversation, 20)
    pinned = rows[6]
    services.message_pin_set(message=pinned, pinned=True)
    ask(conversation)
    first = DbMemory(conversation.id, 600, compact_llm=FakeLLM(default="Summary one."))
    load(first)
    persist(conversation, first)
    answer_current(conversation)
    later = add_message(conversation, "assistant", "answer to current")
    ask(conversation, "next question")

    llm = FakeLLM(default="must not be called")
    second = DbMemory(conversation.id, 600, compact_llm=llm)
    messages = load(second)
    assert llm.calls == []
    assert messages[0].is_summary and "Summary one." in messages[0].content
    current = Message.objects.get(content="current question")
    assert ids(messages) == [pinned.pk] + [r.pk for r in rows[-4:]] + [current.pk, later.pk]
    # The pin is counted once: 35 covered + the pin + 4 recent + the last turn.
    assert second.original_count == 35 + 1 + 4 + 2


def test_rv2_an_unpinned_message_is_summarised_by_the_next_fold(conversation):
    rows = turns(conversation, 20)
    pinned = rows[6]
    services.message_pin_set(message=pinned, pinned=True)
    ask(conversation)
    first = DbMemory(conversation.id, 600, compact_llm=FakeLLM(default="Summary one."))
    load(first)
    persist(conversation, first)
    answer_current(conversation)
    services.message_pin_set(message=pinned, pinned=False)
    more = turns(conversation, 10, tag="later-")
    ask(conversation, "next question")

    llm = FakeLLM(default="Summary two.")
    second = DbMemory(conversation.id, 600, compact_llm=llm)
    load(second)
    assert "Q3:" in transcript(llm)  # now summarised, once
    assert "Summary one." in transcript(llm) and "user: Q2:" not in transcript(llm)
    new = second.last.new_summary
    assert new.uncovered_ids == []
    assert new.covers_through_id == more[-5].pk
    # 35 + the unpinned one + the 4 recent + the answered turn + 16 of the 20 new ones.
    assert new.covered_count == 35 + 1 + 4 + 1 + 16


def test_rv2_a_message_pinned_after_it_was_summarised_comes_back_verbatim(conversation):
    rows = turns(conversation, 20)
    ask(conversation)
    first = DbMemory(conversation.id, 600, compact_llm=FakeLLM(default="Summary one."))
    load(first)
    persist(conversation, first)
    answer_current(conversation)
    services.message_pin_set(message=rows[2], pinned=True)  # Q1, covered by the summary
    ask(conversation, "next question")

    llm = FakeLLM(default="must not be called")
    memory = DbMemory(conversation.id, 800, compact_llm=llm)
    messages = load(memory)
    assert llm.calls == []
    back = [m for m in messages if m.metadata.get("id") == rows[2].pk]
    assert len(back) == 1 and back[0].content == rows[2].content
    assert back[0].metadata.get("covered") is True


def test_rv2_pins_over_half_the_budget_yield_oldest_first(conversation):
    rows = turns(conversation, 20)
    # Six pinned questions of ~85 tokens: ~510 tokens, over half of 600.
    pins = [rows[i] for i in (0, 4, 8, 12, 16, 20)]
    for row in pins:
        services.message_pin_set(message=row, pinned=True)
    ask(conversation)
    llm = FakeLLM(default="Summary.")
    memory = DbMemory(conversation.id, 600, compact_llm=llm)
    messages = load(memory)

    assert (
        memory.last.pins_yielded
        and list(memory.last.pins_yielded) == [p.pk for p in pins][: len(memory.last.pins_yielded)]
    )
    assert list(memory.last.pins_kept) == [p.pk for p in pins][len(memory.last.pins_yielded) :]
    kept_pinned = [m for m in messages if m.pinned]
    assert CompactUtils.estimate_messages_tokens(kept_pinned) <= 300
    # One fewer yield would have been over the cap: only as many as needed yielded.
    last_yielded = next(m for m in load_all(conversation) if m.pk == memory.last.pins_yielded[-1])
    assert (
        CompactUtils.estimate_tokens(last_yielded.content)
        + 4
        + (CompactUtils.estimate_messages_tokens(kept_pinned))
        > 300 - 4
    )
    # A pin that yielded went to the summariser, so the summary records it as covered.
    assert "Q0:" in transcript(llm)
    assert memory.last.pins_yielded[0] not in memory.last.new_summary.uncovered_ids
    assert CompactUtils.estimate_messages_tokens(messages) <= 600


def load_all(conversation):
    return list(Message.objects.filter(conversation=conversation))


def test_rv2_a_covered_pin_that_yields_is_left_out_not_summarised_again(conversation):
    rows = turns(conversation, 20)
    ask(conversation)
    first = DbMemory(conversation.id, 600, compact_llm=FakeLLM(default="Summary one."))
    load(first)
    persist(conversation, first)
    answer_current(conversation)
    huge = add_message(conversation, "user", "a long pasted note " + "x y " * 400)
    add_message(conversation, "assistant", "noted")
    services.message_pin_set(message=rows[0], pinned=True)  # covered by the summary
    services.message_pin_set(message=huge, pinned=True)  # over half the budget alone
    ask(conversation, "next question")

    llm = FakeLLM(default="Summary two.")
    memory = DbMemory(conversation.id, 600, compact_llm=llm)
    messages = load(memory)
    assert memory.last.pins_yielded[0] == rows[0].pk
    assert rows[0].pk not in ids(messages)
    assert "Q0:" not in transcript(llm)  # already in the summary: not summarised twice


# --- RV.3 edited and discarded summaries ------------------------------------------------------


def first_summary(conversation):
    rows = turns(conversation, 20)
    ask(conversation)
    first = DbMemory(
        conversation.id, 600, compact_llm=FakeLLM(default="Budget is 4,200 EUR; host db-17.")
    )
    load(first)
    stored = persist(conversation, first)
    answer_current(conversation)
    add_message(conversation, "assistant", "answer to current")
    ask(conversation, "next question")
    return rows, stored


def test_rv3_an_edited_summary_is_used_exactly_as_written(conversation):
    _rows, stored = first_summary(conversation)
    services.summary_edit(summary=stored, content="Budget is 3,900 EUR (corrected by me).")
    llm = FakeLLM(default="must not be called")
    memory = DbMemory(conversation.id, 600, compact_llm=llm)
    messages = load(memory)
    assert llm.calls == []
    assert messages[0].content == f"{SUMMARY_PREFIX}\nBudget is 3,900 EUR (corrected by me)."
    # The fact check does not put back what the user took out.
    assert "db-17" not in messages[0].content and "Key facts" not in messages[0].content
    assert memory.last.summary_edited and memory.last.summary_in_use.id == stored.pk
    stored.refresh_from_db()
    original = stored.metadata["original"]
    assert "Budget is 4,200 EUR; host db-17." in original and "Key facts:" in original


def test_rv3_a_discarded_summary_is_replaced_by_a_fresh_one_from_the_originals(conversation):
    rows, stored = first_summary(conversation)
    assert services.summary_discard(summary=stored) == 1
    assert summary_latest(conversation_id=conversation.id) is None
    llm = FakeLLM(default="A fresh summary.")
    memory = DbMemory(conversation.id, 600, compact_llm=llm)
    messages = load(memory)
    assert "Budget is 4,200" not in transcript(llm)  # the discarded text is not a source
    assert "user: Q0:" in transcript(llm)  # the original messages are
    assert messages[0].is_summary and "A fresh summary." in messages[0].content
    fresh = persist(conversation, memory)
    assert fresh.pk != stored.pk and summary_latest(conversation_id=conversation.id) == fresh
    assert fresh.covers_through_id > rows[-5].pk


def test_rv3_only_the_summary_in_force_can_be_edited_or_discarded(conversation):
    from chat.errors import Conflict

    _rows, stored = first_summary(conversation)
    services.summary_discard(summary=stored)
    with pytest.raises(Conflict):
        services.summary_edit(summary=stored, content="too late")
    with pytest.raises(Conflict):
        services.summary_discard(summary=stored)


def test_rv1_the_summarized_count_is_the_summarys_own_with_a_covered_pin_loaded_again(
    conversation,
):
    """A pin the summary covers is loaded again verbatim: counting kept messages would
    take it for one the summary does not stand for. The count is the summary's own."""
    rows = turns(conversation, 20)
    ask(conversation)
    first = DbMemory(conversation.id, 600, compact_llm=FakeLLM(default="Summary one."))
    load(first)
    stored = persist(conversation, first)
    assert (
        first.last.summarized_count == first.last.new_summary.covered_count == stored.covered_count
    )
    answer_current(conversation)
    services.message_pin_set(message=rows[2], pinned=True)  # covered by the summary
    ask(conversation, "next question")

    memory = DbMemory(conversation.id, 800, compact_llm=FakeLLM(default="must not be called"))
    load(memory)
    assert memory.last.strategy == "summary"
    assert memory.last.summarized_count == stored.covered_count
    # What kept messages would say: one fewer, the pin counted as kept.
    assert memory.original_count - (memory.compacted_count - 1) == stored.covered_count - 1
