"""The ``recall`` tool's search over the persisted conversation (chat/recall.py)."""

from __future__ import annotations

import pytest

from chat import services
from chat.models import Message
from chat.recall import recall_passages, recall_search_for, search_terms

pytestmark = pytest.mark.django_db


def say(conversation, content: str, role: str = "user") -> Message:
    if role == "user":
        return services.user_message_create(conversation=conversation, content=content)
    message = services.assistant_message_start(conversation=conversation, run_id="r", mode="react")
    return services.assistant_message_finish(message=message, content=content)


def test_search_terms_drop_look_back_words_and_keep_numbers():
    assert search_terms("What did I say about the Budget for 2025?") == ["budget", "2025"]


def test_search_terms_split_cjk_into_pairs():
    assert search_terms("之前的预算") == ["之前", "前的", "的预", "预算"]


def test_passages_are_verbatim_and_best_match_first(conversation):
    say(conversation, "We agreed the budget is 48,500 EUR for the Lisbon office.")
    say(conversation, "The budget meeting is on Friday.", role="assistant")
    say(conversation, "Unrelated: the cat is asleep.")
    passages = recall_passages(conversation_id=conversation.id, query="Lisbon budget")
    assert len(passages) == 2
    assert "We agreed the budget is 48,500 EUR for the Lisbon office." in passages[0]
    assert passages[0].startswith("user (")
    assert "The budget meeting is on Friday." in passages[1]
    assert passages[1].startswith("assistant (")


def test_other_conversations_are_never_searched(conversation, foreign_conversation):
    say(foreign_conversation, "Mallory's password hint: budget")
    say(conversation, "nothing to see")
    assert recall_passages(conversation_id=conversation.id, query="budget") == []


def test_before_id_excludes_the_current_query(conversation):
    early = say(conversation, "The server is called tern-7.")
    current = say(conversation, "What is the server called?")
    passages = recall_passages(
        conversation_id=conversation.id, query="server", before_id=current.id
    )
    assert passages == [passages[0]] and "tern-7" in passages[0]
    assert early.id < current.id


def test_long_message_gives_a_passage_around_the_match(conversation):
    text = "filler " * 400 + "the secret number is 9173 " + "padding " * 400
    say(conversation, text)
    (passage,) = recall_passages(conversation_id=conversation.id, query="secret number")
    body = passage.split(": ", 1)[1]
    assert "the secret number is 9173" in body
    assert body.startswith("…") and body.endswith("…")
    assert len(body) <= 600 + 2
    assert body.strip("…").strip() in text


def test_non_ascii_case_is_matched(conversation):
    say(conversation, "Die Übergabe ist am Montag.")
    (passage,) = recall_passages(conversation_id=conversation.id, query="übergabe")
    assert "Die Übergabe ist am Montag." in passage


def test_chinese_is_found_by_its_pairs(conversation):
    say(conversation, "我们的预算是三万元。")
    (passage,) = recall_passages(conversation_id=conversation.id, query="预算")
    assert "我们的预算是三万元。" in passage


def test_limit_and_empty_query(conversation):
    for i in range(5):
        say(conversation, f"note {i} about apples")
    assert len(recall_passages(conversation_id=conversation.id, query="apples", limit=3)) == 3
    assert recall_passages(conversation_id=conversation.id, query="   ") == []


@pytest.mark.django_db(transaction=True)
async def test_async_search_for_the_agent(conversation):
    from asgiref.sync import sync_to_async

    await sync_to_async(say)(conversation, "The deploy key rotates on the 3rd.")
    search = recall_search_for(conversation.id)
    assert await search("deploy key", 5) == [
        (await sync_to_async(recall_passages)(conversation_id=conversation.id, query="deploy key"))[
            0
        ]
    ]
