"""/api/conversations/ and /api/conversations/<id>/: CRUD, validation, owner-only."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from chat import services
from chat.models import Conversation, Message

pytestmark = pytest.mark.django_db

LIST_URL = "/api/conversations/"


def detail_url(conversation_id) -> str:
    return reverse("chat:conversation", args=[str(conversation_id)])


def post_json(client, url, body, method="post"):
    payload = body if isinstance(body, str | bytes) else json.dumps(body)
    return getattr(client, method)(url, payload, content_type="application/json")


def test_routes_match_the_design():
    assert reverse("chat:conversations") == LIST_URL
    assert detail_url("abc") == "/api/conversations/abc/"


def test_list_returns_only_own_conversations_newest_first(
    logged_in_client, user, foreign_conversation
):
    older = services.conversation_create(owner=user, title="older")
    newer = services.conversation_create(owner=user, title="newer")
    services.conversation_update(conversation=older, title="older, touched last")
    response = logged_in_client.get(LIST_URL)
    assert response.status_code == 200
    items = response.json()["conversations"]
    assert [c["id"] for c in items] == [str(older.id), str(newer.id)]
    assert str(foreign_conversation.id) not in response.content.decode()
    assert set(items[0]) == {
        "id",
        "title",
        "mode",
        "model_config",
        "builtin_model",
        "project",
        "instructions",
        "created_at",
        "updated_at",
    }


def test_create_with_defaults(logged_in_client, user):
    response = logged_in_client.post(LIST_URL, "", content_type="application/json")
    assert response.status_code == 201
    body = response.json()
    conversation = Conversation.objects.get(pk=body["id"])
    assert conversation.owner == user
    assert (body["title"], body["mode"]) == ("", "react")


def test_create_with_title_and_mode(logged_in_client):
    response = post_json(logged_in_client, LIST_URL, {"title": "  Plan  trip ", "mode": "dag"})
    assert response.status_code == 201
    assert (response.json()["title"], response.json()["mode"]) == ("Plan trip", "dag")


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ("{not json", "invalid_json"),
        ("[1, 2]", "invalid_json"),
        ({"mode": "chaos"}, "invalid_mode"),
        ({"title": "x" * 201}, "title_too_long"),
        ({"title": 42}, "invalid_title"),
    ],
)
def test_create_rejects_bad_input_with_400(logged_in_client, body, code):
    response = post_json(logged_in_client, LIST_URL, body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == code
    assert Conversation.objects.count() == 0


def test_get_one(logged_in_client, conversation):
    response = logged_in_client.get(detail_url(conversation.id))
    assert response.status_code == 200
    assert response.json()["title"] == "Alice's chat"


def test_patch_renames_and_switches_mode(logged_in_client, conversation):
    response = post_json(
        logged_in_client, detail_url(conversation.id), {"title": "Renamed", "mode": "dag"}, "patch"
    )
    assert response.status_code == 200
    conversation.refresh_from_db()
    assert (conversation.title, conversation.mode) == ("Renamed", "dag")


def test_patch_with_only_a_title_keeps_the_mode(logged_in_client, user):
    conversation = services.conversation_create(owner=user, mode="dag")
    post_json(logged_in_client, detail_url(conversation.id), {"title": "T"}, "patch")
    conversation.refresh_from_db()
    assert (conversation.title, conversation.mode) == ("T", "dag")


@pytest.mark.parametrize(
    ("body", "code"),
    [("nope", "invalid_json"), ({"mode": "x"}, "invalid_mode"), ({"title": "y" * 201}, None)],
)
def test_patch_rejects_bad_input_and_changes_nothing(logged_in_client, conversation, body, code):
    response = post_json(logged_in_client, detail_url(conversation.id), body, "patch")
    assert response.status_code == 400
    if code:
        assert response.json()["error"]["code"] == code
    conversation.refresh_from_db()
    assert (conversation.title, conversation.mode) == ("Alice's chat", "react")


def test_delete_removes_conversation_and_messages(logged_in_client, conversation):
    services.user_message_create(conversation=conversation, content="hello")
    response = logged_in_client.delete(detail_url(conversation.id))
    assert response.status_code == 204
    assert not Conversation.objects.filter(pk=conversation.pk).exists()
    assert not Message.objects.exists()


def test_unsupported_method_is_405_json(logged_in_client, conversation):
    response = logged_in_client.put(detail_url(conversation.id), "{}", "application/json")
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"
    assert set(response["Allow"].split(", ")) == {"GET", "PATCH", "DELETE"}


@pytest.mark.parametrize("conversation_id", ["not-a-uuid", "00000000-0000-0000-0000-000000000000"])
def test_unknown_or_malformed_id_is_404_json(logged_in_client, conversation_id):
    response = logged_in_client.get(detail_url(conversation_id))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


class TestAnotherUsersConversation:
    """Every verb on another user's id answers 404 and touches nothing (never 403: no leak)."""

    def test_get(self, logged_in_client, foreign_conversation):
        response = logged_in_client.get(detail_url(foreign_conversation.id))
        assert response.status_code == 404
        assert "Mallory" not in response.content.decode()

    def test_patch(self, logged_in_client, foreign_conversation):
        response = post_json(
            logged_in_client, detail_url(foreign_conversation.id), {"title": "pwned"}, "patch"
        )
        assert response.status_code == 404
        foreign_conversation.refresh_from_db()
        assert foreign_conversation.title == "Mallory's secret"

    def test_delete(self, logged_in_client, foreign_conversation):
        response = logged_in_client.delete(detail_url(foreign_conversation.id))
        assert response.status_code == 404
        assert Conversation.objects.filter(pk=foreign_conversation.pk).exists()


def _titles(body) -> list[str]:
    return [c["title"] for c in body["conversations"]]


def test_list_pages_by_cursor_newest_first_without_gaps_or_repeats(logged_in_client, user):
    for n in range(7):
        services.conversation_create(owner=user, title=f"c{n}")
    seen, cursor, pages = [], None, 0
    while True:
        params = {"limit": 3, **({"before": cursor} if cursor else {})}
        body = logged_in_client.get(LIST_URL, params).json()
        seen += _titles(body)
        pages += 1
        assert body["has_more"] is (body["next"] is not None)
        if not body["has_more"]:
            break
        cursor = body["next"]
    assert pages == 3
    assert seen == [f"c{n}" for n in reversed(range(7))]


def test_list_page_cursor_survives_a_conversation_becoming_active(logged_in_client, user):
    """A conversation touched while the user scrolls moves to the top; later pages still
    continue exactly after the last row the client saw."""
    rows = [services.conversation_create(owner=user, title=f"c{n}") for n in range(6)]
    first = logged_in_client.get(LIST_URL, {"limit": 2}).json()
    assert _titles(first) == ["c5", "c4"]
    services.conversation_update(conversation=rows[0], title="c0, touched")
    second = logged_in_client.get(LIST_URL, {"limit": 2, "before": first["next"]}).json()
    assert _titles(second) == ["c3", "c2"]
    third = logged_in_client.get(LIST_URL, {"limit": 2, "before": second["next"]}).json()
    assert _titles(third) == ["c1"]
    assert third["has_more"] is False


def test_list_defaults_to_fifty(logged_in_client, user):
    Conversation.objects.bulk_create([Conversation(owner=user, title=f"c{n}") for n in range(52)])
    body = logged_in_client.get(LIST_URL).json()
    assert len(body["conversations"]) == 50
    assert body["has_more"] is True
    rest = logged_in_client.get(LIST_URL, {"before": body["next"]}).json()
    assert len(rest["conversations"]) == 2
    assert rest["next"] is None
    ids = {c["id"] for c in body["conversations"]} | {c["id"] for c in rest["conversations"]}
    assert len(ids) == 52


def test_list_page_never_reaches_another_users_conversations(
    logged_in_client, user, foreign_conversation
):
    services.conversation_create(owner=user, title="mine")
    body = logged_in_client.get(LIST_URL, {"limit": 1}).json()
    assert _titles(body) == ["mine"]
    assert body["has_more"] is False


_NOW, _ID = "2026-01-01T00:00:00+00:00", "00000000-0000-4000-8000-000000000000"


def _cursor_of(key: str) -> str:
    """A cursor as the API encodes one, around a forged key."""
    import base64

    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"limit": "0"}, "invalid_limit"),
        ({"limit": "201"}, "invalid_limit"),
        ({"limit": "ten"}, "invalid_limit"),
        ({"before": "not-a-cursor"}, "invalid_cursor"),
        ({"before": "x" * 300}, "invalid_cursor"),
        # Well-formed base64 of a key with a naive time, and of a key with a bad id.
        ({"before": "MjAyNi0wMS0wMVQwMDowMDowMHwyMDI2LTAxLTAxVDAwOjAwOjAwfDE"}, "invalid_cursor"),
        # Times at the calendar's edges, whose UTC falls outside it (year 0, year 10000).
        ({"before": _cursor_of(f"0001-01-01T00:00:00+14:00|{_NOW}|{_ID}")}, "invalid_cursor"),
        ({"before": _cursor_of(f"9999-12-31T23:59:59-14:00|{_NOW}|{_ID}")}, "invalid_cursor"),
    ],
)
def test_list_rejects_a_bad_page_request_with_400(logged_in_client, params, code):
    response = logged_in_client.get(LIST_URL, params)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == code
