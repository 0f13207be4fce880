"""Summaries that last (issue 5): a scripted 200-turn conversation, with and without them.

Without persisted summaries DbMemory re-summarises the whole overflow on every request
once the conversation is long (FIM One's behaviour); with them, the next load starts from
the newest summary and summarises again only when that no longer fits. The compaction
LLM is a counting, extractive summariser: it keeps every "code-N = V" fact it is shown.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

import pytest
from asgiref.sync import async_to_sync

from chat.compaction.summaries import summary_save
from chat.models import ContextSummary, Conversation, Message
from contextmgmt.db_memory import DbMemory
from tests.support.fake_llm import FakeLLM

TURNS = 200
BUDGET = 6_000
FACT = re.compile(r"code-(\d+) = (\d+)")
STATED = re.compile(r"code-(\d+) (?:=|is) (\d+)")  # as dictated, or as acknowledged


def fact_value(turn: int) -> int:
    return (turn * 7919) % 100_000


def extractive_summary(messages) -> str:
    """Every fact in the compaction request (old summary included), nothing else."""
    transcript = "\n".join(m.text() for m in messages)
    facts = dict(FACT.findall(transcript))
    listed = "; ".join(
        f"code-{k} = {v}" for k, v in sorted(facts.items(), key=lambda kv: int(kv[0]))
    )
    return f"The user dictated codes to remember: {listed}."


@dataclass
class Outcome:
    calls: int = 0
    input_tokens: int = 0
    facts_in_final_context: set[int] = field(default_factory=set)
    summaries_stored: int = 0


def run_conversation(conversation: Conversation, *, persist: bool) -> Outcome:
    summariser = FakeLLM(default=extractive_summary)
    outcome = Outcome()
    messages = []
    for turn in range(TURNS):
        query = Message.objects.create(
            conversation=conversation,
            role="user",
            kind="query",
            status="pending",
            content=f"Turn {turn}: please remember code-{turn} = {fact_value(turn)}. "
            + "Some context about the project and what we discussed so far. " * 3,
        )
        memory = DbMemory(conversation.id, BUDGET, compact_llm=summariser, use_summaries=persist)
        messages = async_to_sync(memory.get_messages)()
        if memory.last.result is not None and memory.last.result.strategy == "llm":
            outcome.input_tokens += memory.last.result.usage.input_tokens
        if persist and memory.last.new_summary is not None:
            summary_save(conversation_id=conversation.id, **asdict(memory.last.new_summary))
        Message.objects.filter(pk=query.pk).update(status="done")
        Message.objects.create(
            conversation=conversation,
            role="assistant",
            kind="answer",
            content=f"Noted: code-{turn} is {fact_value(turn)}. Anything else about the project?",
        )
    outcome.calls = len(summariser.calls)
    final_text = "\n".join(m.text() for m in messages)
    outcome.facts_in_final_context = {
        int(k) for k, v in STATED.findall(final_text) if int(v) == fact_value(int(k))
    }
    outcome.summaries_stored = ContextSummary.objects.filter(conversation=conversation).count()
    return outcome


@pytest.fixture
def fresh_conversations(user) -> tuple[Conversation, Conversation]:
    return (
        Conversation.objects.create(owner=user, title="re-summarise every request"),
        Conversation.objects.create(owner=user, title="persisted summaries"),
    )


@pytest.mark.django_db
def test_persisted_summaries_cost_at_most_a_fifth_and_keep_the_facts(fresh_conversations):
    every_request = run_conversation(fresh_conversations[0], persist=False)
    persisted = run_conversation(fresh_conversations[1], persist=True)

    # The scenario does overflow: the baseline summarises on (nearly) every late request.
    assert every_request.calls > TURNS // 2
    assert every_request.summaries_stored == 0
    assert persisted.summaries_stored >= 2  # again when the summary no longer fits
    assert persisted.summaries_stored <= persisted.calls  # a large one may take rounds

    ratio = persisted.input_tokens / every_request.input_tokens
    assert ratio <= 0.20, (persisted, every_request)
    assert persisted.calls * 5 <= every_request.calls

    # Facts of every earlier turn (the last turn's query is the current one, not history).
    earlier = set(range(TURNS - 1))
    assert persisted.facts_in_final_context >= earlier
    assert len(persisted.facts_in_final_context) >= len(every_request.facts_in_final_context)
