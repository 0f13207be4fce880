"""Hostile HTTP bodies and public routes (RO.2, issue findings on error shapes).

Deeply nested JSON, bodies over the size limit and multipart bodies without a boundary get
the API's documented ``{"error": {"code", "message"}}`` with a 4xx; password reset exists only
when e-mail is configured; ``/healthz`` tells a load balancer what answers, and nothing more.
"""

from __future__ import annotations

import json

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse

from chat import drain
from chat.json_input import MAX_DEPTH
from chat.models import Conversation

pytestmark = pytest.mark.django_db

DEEP = 1_100  # what the hostile test sent: 2.2 KB, past Python's recursion limit


@pytest.fixture
def owner_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _error(response) -> dict:
    assert response["Content-Type"] == "application/json", response.content[:200]
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    return body["error"]


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, DEEP, 50_000])
@pytest.mark.parametrize("opener", ["[", '{"a":'])
def test_deeply_nested_json_is_a_documented_400(owner_client, depth, opener):
    closer = "]" if opener == "[" else "}"
    body = opener * depth + "1" + closer * depth
    response = owner_client.post(
        reverse("chat:conversations"), body, content_type="application/json"
    )
    assert response.status_code == 400
    assert _error(response)["code"] == "invalid_json"
    assert Conversation.objects.count() == 0


def test_nesting_within_the_limit_is_parsed(owner_client):
    nested = {"title": "ok", "extra": json.loads("[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1))}
    response = owner_client.post(
        reverse("chat:conversations"), json.dumps(nested), content_type="application/json"
    )
    assert response.status_code == 201


def test_a_body_over_the_limit_is_a_json_413(owner_client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000
    body = json.dumps({"title": "x" * 5_000})
    response = owner_client.post(
        reverse("chat:conversations"), body, content_type="application/json"
    )
    assert response.status_code == 413
    assert _error(response)["code"] == "body_too_large"


def test_a_multipart_body_without_a_boundary_is_a_json_400(owner_client, user):
    conversation = Conversation.objects.create(owner=user)
    url = reverse("chat:attachment_upload", args=[conversation.id])
    response = owner_client.generic(
        "POST", url, b"--x\r\nbroken\r\n", content_type="multipart/form-data"
    )
    assert response.status_code == 400
    assert _error(response)["code"] == "invalid_multipart"


def test_an_unknown_api_route_is_a_json_404(owner_client):
    response = owner_client.get("/api/no-such-thing/")
    assert response.status_code == 404
    assert _error(response)["code"] == "not_found"


def test_pages_keep_djangos_own_error_pages(owner_client):
    response = owner_client.get("/no-such-page/x/y/")
    assert response.status_code == 404
    assert not response["Content-Type"].startswith("application/json")


PASSWORD_RESET_ROUTES = ["password_reset", "password_reset_done", "password_reset_complete"]


@pytest.mark.parametrize("name", PASSWORD_RESET_ROUTES)
def test_password_reset_is_absent_without_email(client, settings, name):
    settings.EMAIL_URL = ""
    assert client.get(reverse(name)).status_code == 404
    assert client.post(reverse(name), {"email": "alice@example.com"}).status_code == 404
    confirm = reverse("password_reset_confirm", args=["MQ", "set-password"])
    assert client.get(confirm).status_code == 404
    assert mail.outbox == []


def test_the_login_page_links_to_reset_only_when_email_is_configured(client, settings):
    settings.EMAIL_URL = ""
    assert reverse("password_reset") not in client.get(reverse("login")).content.decode()
    settings.EMAIL_URL = "smtp://mail.example.com:25"
    assert reverse("password_reset") in client.get(reverse("login")).content.decode()


def test_with_email_configured_a_reset_sends_one_mail(client, settings, user):
    settings.EMAIL_URL = "smtp://mail.example.com:25"  # the test runner swaps in locmem
    user.email = "alice@example.com"
    user.save()
    response = client.post(reverse("password_reset"), {"email": "alice@example.com"})
    assert response.status_code == 302
    assert len(mail.outbox) == 1 and "alice@example.com" in mail.outbox[0].to


def test_email_has_a_timeout_by_default():
    from django.conf import settings

    assert settings.EMAIL_TIMEOUT and settings.EMAIL_TIMEOUT <= 30


def test_healthz_is_public_json_and_says_what_answers(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "checks": {"process": "ok", "database": "ok", "channel_layer": "ok"},
    }


def test_healthz_is_503_while_draining(client):
    drain.begin()
    try:
        response = client.get("/healthz")
    finally:
        drain.reset()
    assert response.status_code == 503
    assert response.json()["checks"]["process"] == "draining"


def test_healthz_is_503_without_a_database_and_leaks_no_detail(client, monkeypatch):
    from chat import health

    def broken() -> None:
        raise OSError("connection to db.internal:5432 refused, password=hunter2")

    monkeypatch.setattr(health, "_database_answers", broken)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["checks"]["database"] == "unavailable"
    assert b"db.internal" not in response.content and b"hunter2" not in response.content
