"""chat.compaction.summaries: persisting DbMemory's summaries for the next load (issue 5, R4.2).

(The service lives in the chat app, which owns persistence; its tests sit with the other
summary tests here.)
"""

import pytest
from django.core.exceptions import ValidationError

from chat.compaction.summaries import summary_latest, summary_save
from chat.models import ContextSummary, Conversation, Message


@pytest.fixture
def six_messages(user) -> list[Message]:
    conversation = Conversation.objects.create(owner=user)
    return [
        Message.objects.create(
            conversation=conversation, role="user" if i % 2 == 0 else "assistant", content=f"m{i}"
        )
        for i in range(6)
    ]


def save(messages, index: int, text: str = "[Conversation summary]\nfacts", **extra):
    return summary_save(
        conversation_id=messages[0].conversation_id,
        summary=text,
        covers_through_id=messages[index].pk,
        covered_count=index + 1,
        **extra,
    )


@pytest.mark.django_db
def test_no_summary_yet(six_messages):
    assert summary_latest(conversation_id=six_messages[0].conversation_id) is None


@pytest.mark.django_db
def test_saved_summary_is_the_latest(six_messages):
    saved = save(six_messages, 2, tokens=12, metadata={"covered_tokens": 40})
    latest = summary_latest(conversation_id=six_messages[0].conversation_id)
    assert latest == saved
    assert (latest.covers_through_id, latest.covered_count, latest.tokens) == (
        six_messages[2].pk,
        3,
        12,
    )
    assert latest.metadata == {"covered_tokens": 40}


@pytest.mark.django_db
def test_a_summary_covering_more_replaces_the_latest(six_messages):
    save(six_messages, 1)
    newer = save(six_messages, 3, text="more")
    assert summary_latest(conversation_id=six_messages[0].conversation_id) == newer


@pytest.mark.django_db
def test_summaries_only_move_forward(six_messages):
    # Two runs raced: the one that covers less must not become the latest.
    ahead = save(six_messages, 4, text="ahead")
    behind = save(six_messages, 2, text="behind")
    assert behind == ahead
    assert ContextSummary.objects.count() == 1
    assert save(six_messages, 4, text="same point") == ahead


@pytest.mark.django_db
def test_message_of_another_conversation_is_refused(six_messages, user):
    other = Conversation.objects.create(owner=user)
    stranger = Message.objects.create(conversation=other, role="user", content="x")
    with pytest.raises(ValidationError, match="not part of conversation"):
        summary_save(
            conversation_id=six_messages[0].conversation_id,
            summary="s",
            covers_through_id=stranger.pk,
            covered_count=1,
        )
    assert not ContextSummary.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(("text", "count"), [("   ", 3), ("ok", 0)])
def test_empty_summary_or_nothing_covered_is_refused(six_messages, text, count):
    with pytest.raises(ValidationError):
        summary_save(
            conversation_id=six_messages[0].conversation_id,
            summary=text,
            covers_through_id=six_messages[2].pk,
            covered_count=count,
        )


@pytest.mark.django_db
def test_summary_goes_with_the_message_it_covers(six_messages):
    save(six_messages, 2)
    six_messages[2].delete()
    assert summary_latest(conversation_id=six_messages[0].conversation_id) is None
