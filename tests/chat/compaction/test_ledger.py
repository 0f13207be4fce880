"""The compaction ledger's totals are kept on the conversation as answers are stored, so the
gauge reads them without reading every answer; they always equal the sum over the answers."""

from __future__ import annotations

import importlib
import pkgutil

import pytest
from django.apps import apps

from chat import migrations, services
from chat.compaction.ledger import compaction_ledger, ledger_of_answers
from chat.models import ContextSummary, Conversation, Message

pytestmark = pytest.mark.django_db


def _usage(i: int) -> dict:
    return {
        "input_tokens": 100 + i,
        "output_tokens": 10,
        "compaction_input_tokens": 7 * i,
        "compaction_output_tokens": 3 * i,
        "compaction_saved_tokens": 50 * i,
        "cached_input_tokens": 11 * i,
        "compactions": [
            {"scope": "history", "saved_tokens": 40 * i, "masked_count": i % 3},
            {"scope": "guard", "reused_summary": i % 2 == 0},
        ],
    }


def _summed(conversation: Conversation) -> dict:
    answers = Message.objects.filter(conversation=conversation, role="assistant")
    return ledger_of_answers(answers.values_list("metadata", flat=True))


@pytest.fixture
def answered_with_compactions(user) -> Conversation:
    """Five answers, each with compaction usage, three of them starting from a summary;
    images described after two of them."""
    conversation = services.conversation_create(owner=user, title="ledger")
    question = services.user_message_create(conversation=conversation, content="q", run_id="r0")
    summary = ContextSummary.objects.create(
        conversation=conversation, covers_through=question, content="s", covered_count=1
    )
    for i in range(1, 6):
        answer = services.assistant_message_start(
            conversation=conversation, run_id=f"r{i}", mode="react", question=question
        )
        compaction = {"summary_id": summary.pk, "tokens_before": 900, "tokens_after": 300}
        services.assistant_message_finish(
            message=answer,
            content=f"a{i}",
            usage=_usage(i),
            compaction=compaction if i % 2 else None,
        )
        if i in (2, 5):
            services.assistant_usage_add_descriptions(
                message_id=answer.pk, images=1, input_tokens=13, output_tokens=4
            )
    return conversation


def test_the_stored_totals_equal_the_sum_over_the_answers(answered_with_compactions):
    conversation = answered_with_compactions
    stored = Conversation.objects.get(pk=conversation.pk).ledger
    assert stored == _summed(conversation)
    ledger = compaction_ledger(conversation=conversation)
    assert ledger["cost_input_tokens"] == 7 * 15 + 2 * 13  # and the images described after
    # Every history entry, and the guard's of odd answers: a reused summary is not counted.
    assert ledger["compactions"] == 5 + 3
    (line,) = ledger["summaries"]
    assert (line["requests"], line["saved_input_tokens"]) == (3, 40 * (1 + 3 + 5))


def test_finishing_an_answer_again_replaces_its_share(answered_with_compactions):
    conversation = answered_with_compactions
    answer = Message.objects.filter(conversation=conversation, role="assistant").last()
    services.assistant_message_finish(message=answer, content="again", usage=_usage(1))
    assert Conversation.objects.get(pk=conversation.pk).ledger == _summed(conversation)


def test_the_migration_sums_the_answers_a_conversation_already_has(answered_with_compactions):
    conversation = answered_with_compactions
    Conversation.objects.filter(pk=conversation.pk).update(ledger={})
    (name,) = [m.name for m in pkgutil.iter_modules(migrations.__path__) if "_ledger" in m.name]
    migration = importlib.import_module(f"chat.migrations.{name}")
    migration.totals_of_existing_answers(apps, None)
    assert Conversation.objects.get(pk=conversation.pk).ledger == _summed(conversation)
