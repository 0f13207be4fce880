"""Versions of an edited question or a regenerated answer (chat/versions.py): every version
is kept, one is shown with its branch, and the branch shown is what the model's history,
search and the export see. Switched with ``POST …/messages/<id>/show/``, owner-only."""

from __future__ import annotations

import json
import uuid

import pytest
from asgiref.sync import async_to_sync
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chat import services, versions
from chat.errors import Conflict
from chat.models import Conversation, Message
from chat.runs import storage
from chat.search import conversations as search
from contextmgmt.db_memory import DbMemory

pytestmark = pytest.mark.django_db


# --- building conversations as runs leave them ----------------------------------------------


def ask(conversation: Conversation, question: str, answer: str) -> tuple[Message, Message]:
    run_id = uuid.uuid4().hex
    query = services.user_message_create(conversation=conversation, content=question, run_id=run_id)
    start = services.assistant_message_start(conversation=conversation, run_id=run_id, mode="react")
    return query, finish(start.pk, answer, query.pk)


def finish(answer_id: int, text: str, query_id: int) -> Message:
    answer = Message.objects.get(pk=answer_id)
    return services.assistant_message_finish(
        message=answer, content=text, extra={"query_id": query_id}
    )


def edit(conversation, question: Message, text: str, answer: str) -> tuple[Message, Message]:
    opened = storage.open_edit(
        user=conversation.owner,
        conversation_id=conversation.id,
        message_id=question.pk,
        content=text,
        run_id=uuid.uuid4().hex,
    )
    return opened.query, finish(opened.answer_id, answer, opened.query.pk)


def regenerate(conversation, answer: Message, text: str) -> Message:
    opened = storage.open_retry(
        user=conversation.owner,
        conversation_id=conversation.id,
        message_id=answer.pk,
        run_id=uuid.uuid4().hex,
        any_status=True,
    )
    return finish(opened.answer_id, text, opened.query.pk)


def shown(conversation) -> list[str]:
    rows = Message.objects.filter(conversation=conversation).order_by("id")
    return [m.content for m in rows if not versions.is_hidden(m)]


def show_url(message: Message) -> str:
    return f"/api/conversations/{message.conversation_id}/messages/{message.pk}/show/"


@pytest.fixture
def asked_three_ways(user):
    """A first question answered, then a second question edited twice: three versions."""
    chat = services.conversation_create(owner=user)
    ask(chat, "Hello there", "Hi!")
    q1, _ = ask(chat, "What is 6*7 (first wording)?", "Forty-one, wrongly")
    q2, _ = edit(chat, q1, "What is 7*8 (second wording)?", "Fifty-six")
    q3, _ = edit(chat, q2, "What is 8*9 (third wording)?", "Seventy-two")
    chat.refresh_from_db()
    return chat, (q1, q2, q3)


# --- the versions and the branch shown -------------------------------------------------------


def test_an_edited_question_keeps_every_version_and_shows_the_newest(
    logged_in_client, asked_three_ways
):
    chat, (q1, q2, q3) = asked_three_ways
    assert shown(chat) == ["Hello there", "Hi!", "What is 8*9 (third wording)?", "Seventy-two"]
    page = logged_in_client.get(f"/api/conversations/{chat.id}/messages/").json()["messages"]
    by_id = {m["id"]: m for m in page}
    assert by_id[q3.pk]["versions"] == [q1.pk, q2.pk, q3.pk]
    assert by_id[q1.pk]["versions"] == [q1.pk, q2.pk, q3.pk]
    assert by_id[q1.pk]["superseded_by"] is not None and by_id[q3.pk]["superseded_by"] is None
    assert [m["versions"] for m in page if m["content"] in ("Hello there", "Hi!")] == [None, None]


def test_showing_version_one_is_what_the_model_search_and_export_see(
    logged_in_client, asked_three_ways
):
    chat, (q1, _q2, q3) = asked_three_ways
    response = logged_in_client.post(show_url(q1))
    assert response.status_code == 200, response.content
    assert response.json()["versions"] == [q1.pk, _q2.pk, q3.pk]
    assert shown(chat) == [
        "Hello there",
        "Hi!",
        "What is 6*7 (first wording)?",
        "Forty-one, wrongly",
    ]

    # The model's history: the branch shown (DbMemory, as a run loads it).
    memory = DbMemory(conversation_id=chat.id, max_tokens=50_000)
    history = [m.text() for m in async_to_sync(memory.get_messages)()]
    assert "What is 6*7 (first wording)?" in history and "Forty-one, wrongly" in history
    assert not {"What is 8*9 (third wording)?", "Seventy-two", "Fifty-six"} & set(history)

    found = search.search(query="wording", owner_id=chat.owner_id)
    assert [h.document.body for h in found] == ["What is 6*7 (first wording)?"]
    assert search.search(query="seventy", owner_id=chat.owner_id) == []

    text = logged_in_client.get(f"/api/conversations/{chat.id}/export/").content.decode()
    assert "first wording" in text and "Forty-one, wrongly" in text
    assert "second wording" not in text and "third wording" not in text
    assert "Seventy-two" not in text and "Fifty-six" not in text
    data = json.loads(
        logged_in_client.get(f"/api/conversations/{chat.id}/export/?format=json").content
    )
    # The file keeps every version, marked, for whoever processes it.
    kept = {m["content"]: m["superseded_by"] is None for m in data["messages"]}
    assert kept["What is 6*7 (first wording)?"] and not kept["What is 8*9 (third wording)?"]


def test_a_switch_back_brings_the_branch_as_it_was_left(asked_three_ways):
    chat, (q1, q2, q3) = asked_three_ways
    versions.version_show(user=chat.owner, conversation_id=chat.id, message_id=q1.pk)
    # On version one the user regenerates its answer and asks on.
    a1 = Message.objects.get(conversation=chat, content="Forty-one, wrongly")
    a1b = regenerate(chat, a1, "Forty-two")
    ask(chat, "And half of it?", "Twenty-one")
    on_one = shown(chat)
    assert on_one[-4:] == [
        "What is 6*7 (first wording)?",
        "Forty-two",
        "And half of it?",
        "Twenty-one",
    ]

    versions.version_show(user=chat.owner, conversation_id=chat.id, message_id=q2.pk)
    assert shown(chat)[-2:] == ["What is 7*8 (second wording)?", "Fifty-six"]
    # The earlier answer of version one lies inside a branch not shown: refused.
    with pytest.raises(Conflict) as refused:
        versions.version_show(user=chat.owner, conversation_id=chat.id, message_id=a1.pk)
    assert refused.value.code == "not_switchable"

    versions.version_show(user=chat.owner, conversation_id=chat.id, message_id=q1.pk)
    assert shown(chat) == on_one  # the regenerated answer and the follow-on turn
    result = versions.version_show(user=chat.owner, conversation_id=chat.id, message_id=a1.pk)
    assert result.versions == (a1.pk, a1b.pk) and result.changed
    # An answer's branch is what followed it: showing the first answer hides the turn after.
    assert shown(chat)[-2:] == ["What is 6*7 (first wording)?", "Forty-one, wrongly"]
    again = versions.version_show(user=chat.owner, conversation_id=chat.id, message_id=a1.pk)
    assert not again.changed


def test_the_newest_shown_question_and_answer_are_the_ones_edited_and_regenerated(
    asked_three_ways,
):
    chat, (q1, _q2, q3) = asked_three_ways
    versions.version_show(user=chat.owner, conversation_id=chat.id, message_id=q1.pk)
    a1 = Message.objects.get(conversation=chat, content="Forty-one, wrongly")
    # Newer answers exist on hidden branches; the shown one is still the newest shown.
    regenerate(chat, a1, "Forty-two")
    q4, _ = edit(chat, q1, "What is 6*7 (fourth wording)?", "42")
    assert versions.versions_of([q4])[q4.pk] == (q1.pk, _q2.pk, q3.pk, q4.pk)


# --- who may switch, and when ----------------------------------------------------------------


def test_another_users_message_cannot_be_switched(other_user, asked_three_ways):
    chat, (q1, _q2, _q3) = asked_three_ways
    intruder = Client()
    intruder.force_login(other_user)
    response = intruder.post(show_url(q1))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    # Nor through a conversation of their own.
    theirs = services.conversation_create(owner=other_user)
    response = intruder.post(f"/api/conversations/{theirs.id}/messages/{q1.pk}/show/")
    assert response.status_code == 404
    assert shown(chat)[-2:] == ["What is 8*9 (third wording)?", "Seventy-two"]


def test_bad_ids_and_methods_are_refused(logged_in_client, asked_three_ways):
    chat, (q1, _q2, _q3) = asked_three_ways
    for message_id in ("x", "0", "99999999", "1.5"):
        response = logged_in_client.post(
            f"/api/conversations/{chat.id}/messages/{message_id}/show/"
        )
        assert response.status_code == 404, message_id
    assert logged_in_client.get(show_url(q1)).status_code == 405
    assert Client().post(show_url(q1)).status_code == 401


@pytest.mark.parametrize("spelling", [" {}", "+{}", "0{}", "{} ", "{}\n", "arabic", "-{}"])
def test_ro13_an_id_is_plain_ascii_digits_only(logged_in_client, asked_three_ways, spelling):
    """RO.13: " 359", "+359", "0359" and "٣٥٩" were read as id 359."""
    from urllib.parse import quote

    chat, (q1, _q2, _q3) = asked_three_ways
    if spelling == "arabic":
        message_id = str(q1.pk).translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩"))
    else:
        message_id = spelling.format(q1.pk)
    response = logged_in_client.post(
        f"/api/conversations/{chat.id}/messages/{quote(message_id)}/show/"
    )
    assert response.status_code == 404, message_id
    assert response.json()["error"]["code"] == "not_found"
    assert logged_in_client.post(show_url(q1)).status_code == 200
    assert (
        logged_in_client.post(f"/api/conversations/{chat.id}/messages/{'9' * 40}/show/").status_code
        == 404
    )


def test_a_switch_needs_the_csrf_token(csrf_enforcing_client, asked_three_ways):
    chat, (q1, _q2, _q3) = asked_three_ways
    response = csrf_enforcing_client.post(show_url(q1))
    assert response.status_code == 403
    assert shown(chat)[-2:] == ["What is 8*9 (third wording)?", "Seventy-two"]
    csrf_enforcing_client.get("/")  # the page sets the cookie
    token = csrf_enforcing_client.cookies["csrftoken"].value
    response = csrf_enforcing_client.post(show_url(q1), HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 200


def test_no_switch_while_an_answer_is_being_written(logged_in_client, asked_three_ways):
    chat, (q1, _q2, _q3) = asked_three_ways
    services.assistant_message_start(conversation=chat, run_id="busy", mode="react")
    response = logged_in_client.post(show_url(q1))
    assert response.status_code == 409 and response.json()["error"]["code"] == "run_active"
    assert shown(chat)[-3:] == ["What is 8*9 (third wording)?", "Seventy-two", ""]


# --- the title --------------------------------------------------------------------------------


def test_an_automatic_title_follows_the_edited_first_question(logged_in_client, user):
    chat = services.conversation_create(owner=user)
    q1, _ = ask(chat, "Plan a trip to Rome", "Sure.")
    chat.refresh_from_db()
    assert chat.title == "Plan a trip to Rome"
    q2, _ = edit(chat, q1, "Plan a trip to Lisbon", "Gladly.")
    chat.refresh_from_db()
    assert chat.title == "Plan a trip to Lisbon"
    assert search.search(query="lisbon", owner_id=user.pk, kinds=("title",))
    response = logged_in_client.post(show_url(q1))
    assert response.json()["title"] == "Plan a trip to Rome"
    # A later question never names the conversation.
    q3, _ = ask(chat, "What about trains?", "Yes.")
    edit(chat, q3, "What about ferries?", "Also.")
    chat.refresh_from_db()
    assert chat.title == "Plan a trip to Rome"


def test_a_title_the_user_gave_stays(user):
    chat = services.conversation_create(owner=user)
    q1, _ = ask(chat, "Plan a trip to Rome", "Sure.")
    services.conversation_update(conversation=chat, title="Holidays 2027")
    q2, _ = edit(chat, q1, "Plan a trip to Lisbon", "Gladly.")
    versions.version_show(user=user, conversation_id=chat.id, message_id=q1.pk)
    chat.refresh_from_db()
    assert chat.title == "Holidays 2027"


# --- a property: any walk of edits, regenerations, questions and switches ---------------------

STEPS = st.lists(
    st.sampled_from(["ask", "edit", "regenerate", "switch_first", "switch_last", "switch_back"]),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=STEPS)
def test_the_shown_messages_are_one_branch_and_a_switch_back_restores_it(user, steps):
    """Whatever the user does, exactly one version of each question and answer on the shown
    branch is shown, and showing a version then the one shown before gives back the same
    messages."""
    chat = services.conversation_create(owner=user)
    ask(chat, "q0", "a0")
    for n, step in enumerate(steps, start=1):
        rows = [m for m in Message.objects.filter(conversation=chat).order_by("id")]
        visible = [m for m in rows if not versions.is_hidden(m)]
        question = [m for m in visible if m.role == "user"][-1]
        answer = [m for m in visible if m.role == "assistant"][-1]
        if step == "ask":
            ask(chat, f"q{n}", f"a{n}")
        elif step == "edit":
            edit(chat, question, f"q{n}-edited", f"a{n}")
        elif step == "regenerate":
            regenerate(chat, answer, f"a{n}-again")
        else:
            target = question if step != "switch_back" else answer
            group = versions.versions_of([target]).get(target.pk)
            if not group:
                continue
            pick = group[0] if step == "switch_first" else group[-1]
            before = shown(chat)
            previous = next(v for v in group if v in {m.pk for m in visible})
            versions.version_show(user=user, conversation_id=chat.id, message_id=pick)
            versions.version_show(user=user, conversation_id=chat.id, message_id=previous)
            assert shown(chat) == before
            versions.version_show(user=user, conversation_id=chat.id, message_id=pick)
        visible = [
            m for m in Message.objects.filter(conversation=chat) if not versions.is_hidden(m)
        ]
        # One version of each group, alternating question and answer, as a chat reads.
        roots = [versions.root_of(m) for m in visible]
        assert len(roots) == len(set(roots))
        assert [m.role for m in sorted(visible, key=lambda m: m.pk)] == ["user", "assistant"] * (
            len(visible) // 2
        )


# --- rows stored before versions existed ------------------------------------------------------


def test_old_retries_and_edits_become_versions_and_branches():
    """A question answered, the answer regenerated, then the question edited (with a
    follow-up the edit hid), as rows stored before versions existed."""
    old = versions.OldRow
    rows = [
        old(1, "user", "query", superseded_by=6, retry_of=None),  # edited into 6
        old(2, "assistant", "answer", superseded_by=3, retry_of=None),  # regenerated into 3
        old(3, "assistant", "answer", superseded_by=7, retry_of=2),  # hidden by the edit
        old(4, "user", "injected", superseded_by=6, retry_of=None),  # a follow-up, hidden too
        old(5, "assistant", "answer", superseded_by=7, retry_of=None),  # its answer, hidden
        old(6, "user", "query", superseded_by=None, retry_of=None),
        old(7, "assistant", "answer", superseded_by=None, retry_of=None),
    ]
    assert versions.links_of_old_rows(rows) == {
        1: (None, 1),  # the first version, hidden as itself
        6: (1, None),  # its edit, shown
        2: (None, 2),
        3: (2, 1),  # the regenerated answer: a version of 2, on version 1's branch
        4: (None, 1),
        5: (None, 1),
    }
