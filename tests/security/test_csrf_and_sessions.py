"""CSRF on every route and session fixation at login (issue 9).

tests/chat/api/test_access.py checks the API's writes one by one; here every route of the
URLconf is covered, so a new view cannot quietly skip the CSRF check.
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from chat.models import Conversation
from tests.security.routes import http_routes

pytestmark = pytest.mark.django_db

UNSAFE = ("POST", "PUT", "PATCH", "DELETE")


def test_no_view_is_csrf_exempt():
    exempt = [r.template for r in http_routes() if getattr(r.callback, "csrf_exempt", False)]
    assert exempt == []


@pytest.mark.parametrize("route", http_routes(), ids=lambda r: r.template)
def test_unsafe_methods_without_a_token_are_refused_on_every_route(route, user):
    """Logged in (a session is what CSRF abuses), no token: 403 before any view runs."""
    values = {"conversation_id": "00000000-0000-0000-0000-000000000000", "file_id": "x"}
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    url = route.url(values)
    for method in UNSAFE:
        response = client.generic(
            method, url, '{"title": "forged"}', content_type="application/json"
        )
        assert response.status_code == 403, (method, url, response.status_code)
    assert Conversation.objects.count() == 0


def test_a_token_from_another_session_is_refused(user, other_user):
    """A token lifted from the attacker's own session does not work in the victim's."""
    attacker = Client(enforce_csrf_checks=True)
    attacker.force_login(other_user)
    attacker.get(reverse("login"))
    stolen = attacker.cookies["csrftoken"].value

    victim = Client(enforce_csrf_checks=True)
    victim.force_login(user)
    victim.get(reverse("login"))  # the victim has a CSRF cookie of her own
    assert victim.cookies["csrftoken"].value != stolen
    response = victim.post(
        reverse("chat:conversations"), "{}", content_type="application/json",
        HTTP_X_CSRFTOKEN=stolen,
    )  # fmt: skip
    assert response.status_code == 403
    assert Conversation.objects.count() == 0


def _login(client: Client, username: str, password: str):
    client.get(reverse("login"))
    return client.post(
        reverse("login"),
        {
            "username": username,
            "password": password,
            "csrfmiddlewaretoken": client.cookies["csrftoken"].value,
        },
    )


def test_the_session_key_changes_at_login(user):
    """Session fixation: a session id planted before login is worthless after it."""
    client = Client(enforce_csrf_checks=True)
    session = client.session
    session["planted"] = "by an attacker"
    session.save()
    planted = session.session_key
    client.cookies["sessionid"] = planted

    response = _login(client, "alice", "pw-alice-123!")
    assert response.status_code == 302
    after = client.cookies["sessionid"].value
    assert after and after != planted
    # The planted id is not logged in: it carries no user.
    attacker = Client()
    attacker.cookies["sessionid"] = planted
    assert attacker.get(reverse("chat:conversations")).status_code == 401
    assert client.get(reverse("chat:conversations")).status_code == 200


def test_logout_invalidates_the_old_session(user):
    client = Client(enforce_csrf_checks=True)
    _login(client, "alice", "pw-alice-123!")
    old = client.cookies["sessionid"].value
    token = client.cookies["csrftoken"].value
    client.post(reverse("logout"), {"csrfmiddlewaretoken": token})
    replay = Client()
    replay.cookies["sessionid"] = old
    assert replay.get(reverse("chat:conversations")).status_code == 401


def test_session_and_csrf_cookies_are_not_readable_by_scripts_where_it_matters(user):
    client = Client()
    _login(client, "alice", "pw-alice-123!")
    session_cookie = client.cookies["sessionid"]
    assert session_cookie["httponly"]
    assert session_cookie["samesite"] == "Lax"
