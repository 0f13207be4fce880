"""Login and logout pages (issue 2): Django's auth views, ``next`` honoured, no open redirect."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db

PASSWORD = "pw-alice-123!"  # the `user` fixture's password


def test_login_page_renders_a_form_with_csrf(client):
    response = client.get(reverse("login"), {"next": "/api/conversations/"})
    assert response.status_code == 200
    html = response.content.decode()
    assert 'name="csrfmiddlewaretoken"' in html
    assert 'name="username"' in html and 'name="password"' in html
    assert 'value="/api/conversations/"' in html


def test_login_honours_next(client, user):
    response = client.post(
        reverse("login"),
        {"username": "alice", "password": PASSWORD, "next": "/api/conversations/"},
    )
    assert response.status_code == 302
    assert response["Location"] == "/api/conversations/"
    assert client.get("/api/conversations/").status_code == 200


def test_login_without_next_goes_to_the_chat(client, user):
    response = client.post(reverse("login"), {"username": "alice", "password": PASSWORD})
    assert response["Location"] == "/"


def test_login_refuses_an_external_next(client, user):
    response = client.post(
        reverse("login"),
        {"username": "alice", "password": PASSWORD, "next": "https://evil.example/"},
    )
    assert response.status_code == 302
    assert response["Location"] == "/"


def test_wrong_password_shows_an_error_and_stays_logged_out(client, user):
    response = client.post(reverse("login"), {"username": "alice", "password": "wrong"})
    assert response.status_code == 200
    assert 'role="alert"' in response.content.decode()
    assert client.get("/api/conversations/").status_code == 401


def test_login_post_needs_the_csrf_token(user):
    client = Client(enforce_csrf_checks=True)
    response = client.post(reverse("login"), {"username": "alice", "password": PASSWORD})
    assert response.status_code == 403


def test_logout_ends_the_session(logged_in_client):
    response = logged_in_client.post(reverse("logout"))
    assert response.status_code == 302
    assert response["Location"] == reverse("login")
    assert logged_in_client.get("/api/conversations/").status_code == 401


def test_chat_page_redirects_anonymous_users_to_login(client):
    response = client.get(reverse("chat:index"))
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next=/"


def test_chat_page_answers_a_logged_in_user(logged_in_client):
    assert logged_in_client.get(reverse("chat:index")).status_code == 200
