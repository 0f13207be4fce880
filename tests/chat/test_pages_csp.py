"""The Content-Security-Policy header: the app shell's policy, directive by directive."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from chat import services
from tests.chat.images import image_bytes

pytestmark = pytest.mark.django_db

# The policy the chat page has always sent; django-csp must keep every directive of it.
EXPECTED_SHELL_POLICY = {
    "default-src": {"'self'"},
    "script-src": {"'self'"},
    "style-src": {"'self'"},
    "img-src": {"'self'", "blob:", "data:"},
    "connect-src": {"'self'", "ws://testserver", "wss://testserver"},
    "object-src": {"'none'"},
    "base-uri": {"'none'"},
    "frame-ancestors": {"'none'"},
    "form-action": {"'self'"},
}


def directives(header: str) -> dict[str, set[str]]:
    parsed: dict[str, set[str]] = {}
    for part in header.split(";"):
        name, *sources = part.split()
        assert name not in parsed, f"directive {name} given twice"
        parsed[name] = set(sources)
    return parsed


@pytest.fixture
def chat_page(logged_in_client, settings):
    for name in ("LLM_BASE_URL", "LLM_MODEL", "FAST_LLM_BASE_URL", "FAST_LLM_MODEL"):
        setattr(settings, name, "")
    return logged_in_client.get("/")


def test_the_chat_page_sends_the_whole_policy(chat_page):
    assert chat_page.status_code == 200
    assert directives(chat_page["Content-Security-Policy"]) == EXPECTED_SHELL_POLICY


def test_the_socket_origin_follows_the_host_the_page_was_served_from(logged_in_client, settings):
    settings.ALLOWED_HOSTS = ["chat.example.org"]
    response = logged_in_client.get("/", HTTP_HOST="chat.example.org")
    connect = directives(response["Content-Security-Policy"])["connect-src"]
    assert connect == {"'self'", "ws://chat.example.org", "wss://chat.example.org"}


def test_an_attachment_keeps_its_own_sandbox_policy(logged_in_client, user, conversation):
    uploaded = SimpleUploadedFile("photo.png", image_bytes("PNG"), content_type="image/png")
    attachment = services.attachment_create(
        owner=user, conversation=conversation, uploaded_file=uploaded
    )
    response = logged_in_client.get(f"/api/attachments/{attachment.id}/")
    assert directives(response["Content-Security-Policy"]) == {
        "default-src": {"'none'"},
        "sandbox": set(),
    }


def test_the_login_page_and_the_api_send_it_too_but_not_the_admin(client, logged_in_client):
    login = client.get("/accounts/login/")
    assert directives(login["Content-Security-Policy"])["script-src"] == {"'self'"}
    api = logged_in_client.get("/api/conversations/")
    assert directives(api["Content-Security-Policy"])["frame-ancestors"] == {"'none'"}
    assert "Content-Security-Policy" not in client.get("/admin/login/")
