"""Anonymous access and CSRF on every API route (DESIGN §4)."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client
from django.urls import reverse

from chat.models import Conversation

pytestmark = pytest.mark.django_db


ROUTES = [
    ("GET", "chat:conversations"),
    ("POST", "chat:conversations"),
    ("GET", "chat:conversation"),
    ("PATCH", "chat:conversation"),
    ("DELETE", "chat:conversation"),
    ("GET", "chat:messages"),
    ("POST", "chat:attachment_upload"),
    ("GET", "chat:attachment"),
]


def route_url(name: str, conversation) -> str:
    if name == "chat:conversations":
        return reverse(name)
    if name == "chat:attachment":
        return reverse(name, args=[str(uuid.uuid4())])
    return reverse(name, args=[str(conversation.id)])


@pytest.mark.parametrize(("method", "name"), ROUTES)
def test_anonymous_gets_401_json_not_a_login_redirect(client, conversation, method, name):
    url = route_url(name, conversation)
    response = client.generic(method, url, "{}", content_type="application/json")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
    assert Conversation.objects.count() == 1
    assert "Alice" not in response.content.decode()


def csrf_token_for(client: Client) -> str:
    client.get(reverse("login"))  # any page that renders a form sets the cookie
    return client.cookies["csrftoken"].value


@pytest.mark.parametrize(
    ("method", "name"),
    [
        ("post", "chat:conversations"),
        ("patch", "chat:conversation"),
        ("delete", "chat:conversation"),
        ("post", "chat:attachment_upload"),
    ],
)
def test_writes_without_a_csrf_token_are_refused(csrf_enforcing_client, conversation, method, name):
    args = [] if name == "chat:conversations" else [str(conversation.id)]
    body = json.dumps({"title": "forged"})
    response = getattr(csrf_enforcing_client, method)(
        reverse(name, args=args), body, content_type="application/json"
    )
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "csrf_failed"
    conversation.refresh_from_db()
    assert conversation.title == "Alice's chat"
    assert Conversation.objects.count() == 1


def test_writes_with_the_csrf_token_succeed(csrf_enforcing_client, conversation):
    token = csrf_token_for(csrf_enforcing_client)
    url = reverse("chat:conversation", args=[conversation.id])
    response = csrf_enforcing_client.patch(
        url, json.dumps({"title": "ok"}), content_type="application/json", HTTP_X_CSRFTOKEN=token
    )
    assert response.status_code == 200
    created = csrf_enforcing_client.post(
        reverse("chat:conversations"), "{}", content_type="application/json",
        HTTP_X_CSRFTOKEN=token,
    )  # fmt: skip
    assert created.status_code == 201


def test_reads_need_no_csrf_token(csrf_enforcing_client, conversation):
    assert csrf_enforcing_client.get(reverse("chat:conversations")).status_code == 200
