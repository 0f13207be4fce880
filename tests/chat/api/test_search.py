"""GET /api/search/?q= (chat/api/search.py): the user's own conversations by title and
text, every typed word matching, the last one as a prefix."""

from __future__ import annotations

import pytest
from django.test import Client

from chat import services
from tests.support.search_scenarios import say

pytestmark = pytest.mark.django_db

URL = "/api/search/"


def results(client, q, **params):
    response = client.get(URL, {"q": q, **params})
    assert response.status_code == 200, response.content
    return response.json()["results"]


def test_titles_and_messages_of_own_conversations_only(logged_in_client, user, other_user):
    trip = services.conversation_create(owner=user, title="Lisbon trip")
    say(trip, "Book the hotel near Alfama for 3 nights.")
    budget = services.conversation_create(owner=user, title="Budget")
    say(budget, "The Lisbon office costs 48,500 EUR.")
    theirs = services.conversation_create(owner=other_user, title="Lisbon secrets")
    say(theirs, "Lisbon password is hunter2")

    found = results(logged_in_client, "lisbon")
    assert {r["conversation"]["id"] for r in found} == {str(trip.id), str(budget.id)}
    title_hit = next(r for r in found if r["kind"] == "title")
    assert title_hit["conversation"]["title"] == "Lisbon trip"
    assert title_hit["message_id"] is None
    text_hit = next(r for r in found if r["kind"] == "message")
    assert text_hit["role"] == "user" and text_hit["message_id"] is not None
    assert [p for p in text_hit["parts"] if p[1]] == [["Lisbon", True]]
    assert text_hit["snippet"] == "The Lisbon office costs 48,500 EUR."
    assert "hunter2" not in str(found)


def test_every_word_must_match_and_the_last_may_be_unfinished(logged_in_client, user):
    chat = services.conversation_create(owner=user, title="Notes")
    say(chat, "Deploy the invoice service to Frankfurt.")
    say(chat, "Frankfurt weather is mild.")
    typed = results(logged_in_client, "frankfurt invo")
    assert [r["snippet"] for r in typed] == ["Deploy the invoice service to Frankfurt."]
    assert [p[0] for p in typed[0]["parts"] if p[1]] == ["invoice", "Frankfurt"]
    # A finished word (a space after it) matches whole words only.
    assert results(logged_in_client, "frankfurt invo ") == []
    assert results(logged_in_client, "rankfurt") == []


def test_chinese_query(logged_in_client, user):
    chat = services.conversation_create(owner=user, title="项目")
    say(chat, "我们的预算是三万元。")
    (hit,) = results(logged_in_client, "预算")
    assert [p for p in hit["parts"] if p[1]] == [["预算", True]]


def test_retried_answers_are_not_found(logged_in_client, user):
    from chat.models import Message

    chat = services.conversation_create(owner=user, title="Q")
    failed = say(chat, "partial zebra", role="assistant", status="error")
    retry = services.assistant_message_start(conversation=chat, run_id="r", mode="react")
    Message.objects.filter(pk=failed.pk).update(superseded_by=retry)
    assert results(logged_in_client, "zebra") == []


def test_at_most_three_hits_per_conversation_and_the_limit(logged_in_client, user):
    for n in range(3):
        chat = services.conversation_create(owner=user, title=f"Chat {n}")
        for i in range(5):
            say(chat, f"kiwi note {i}")
    assert len(results(logged_in_client, "kiwi")) == 9
    assert len(results(logged_in_client, "kiwi", limit=4)) == 4


@pytest.mark.parametrize(
    ("params", "code"),
    [({"q": "x" * 201}, "query_too_long"), ({"q": "a", "limit": "0"}, "invalid_limit"),
     ({"q": "a", "limit": "x"}, "invalid_limit")],
)  # fmt: skip
def test_bad_input_is_a_clear_400(logged_in_client, params, code):
    response = logged_in_client.get(URL, params)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == code


def test_blank_or_punctuation_only_query_finds_nothing(logged_in_client, user):
    services.conversation_create(owner=user, title="anything")
    assert results(logged_in_client, "") == []
    assert results(logged_in_client, " ?! ") == []


def test_login_required_and_get_only(logged_in_client):
    assert Client().get(URL, {"q": "a"}).status_code == 401
    assert logged_in_client.post(URL, {"q": "a"}).status_code == 405


def test_a_long_paste_is_one_result_shown_by_its_best_passage(logged_in_client, user):
    """A paste indexed as many passages, each naming the word, is one result."""
    chat = services.conversation_create(owner=user, title="Notes")
    rows = [f"Palette {i}: Spedition Nord, Lager {i % 7}" for i in range(400)]
    rows[300] = "Palette 300: Spedition Nord holt am Gate 7 ab, Kennzeichen HH-KL 4821"
    say(chat, "\n".join(rows))
    found = results(logged_in_client, "spedition kennzeichen")
    assert len(found) == 1 and "HH-KL 4821" in found[0]["snippet"], found
    assert len(results(logged_in_client, "spedition")) == 1
