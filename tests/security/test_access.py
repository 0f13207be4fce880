"""Anonymous and cross-user access to every route, enumerated from the URLconfs (issue 9).

DESIGN §4/§5: the API and the socket are for authenticated owners only, another user's ids
answer exactly like unknown ones (404 / close 4404), the admin is for staff. The routes are
read from the resolver (tests/security/routes.py), so a route added later cannot slip past:
it must refuse strangers, or be added to ``PUBLIC`` below with its reason.
"""

from __future__ import annotations

import inspect

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from chat import services
from chat.compaction.summaries import summary_save
from chat.models import Attachment, ContextSummary, Conversation, Message, Project
from chat.projects import services as project_services
from tests.chat.images import image_bytes
from tests.security.routes import http_routes, websocket_path, websocket_routes

# Routes anyone may use, and why. Everything else must refuse an anonymous visitor.
PUBLIC = {
    "login": "the login form",
    "logout": "logging out is harmless without a session",
    # The four reset routes answer 404 unless EMAIL_URL is set (test_hostile_bodies.py).
    "password_reset": "Django's reset form: asks for an e-mail, reveals nothing",
    "password_reset_done": "static confirmation page",
    "password_reset_confirm": "needs a valid signed token to do anything",
    "password_reset_complete": "static confirmation page",
    "healthz": "for load balancers: ok/unavailable of process, database, channel layer",
    "admin:login": "the admin's login form",
    "admin:logout": "logging out is harmless without a session",
    # The login page speaks the visitor's language too: its switch and its JS strings.
    "set_language": "sets only the visitor's own language cookie (CSRF-checked POST)",
    "javascript-catalog": "the interface's translated strings, the same for everyone",
    "chat:favicon": "the site's icon, the same for everyone (the login page shows it)",
}
# Routes about the logged-in user's own things (no id in the URL).
OWN_PAGES = {
    "chat:index",
    "chat:conversations",
    "chat:projects",  # lists and creates the caller's own projects
    "chat:search",  # searches the caller's own conversations only (test_api_search.py)
    "chat:tools_catalogue",  # the tools a new chat would have: nothing of any conversation
    "password_change",
    "password_change_done",
}
METHODS = ("get", "post", "patch", "delete")
SECRET_TITLE = "Alice's secret plans"
SECRET_TEXT = "the vault code is 4242"

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media_root")]


@pytest.fixture
def alices_things(user):
    """Alice's conversation with a message and an image, in her project, by id for the URL
    parameters."""
    project = project_services.project_create(
        owner=user, name=SECRET_TITLE, instructions=SECRET_TEXT
    )
    conversation = services.conversation_create(
        owner=user, title=SECRET_TITLE, project_id=project.pk
    )
    attachment = services.attachment_create(
        owner=user,
        conversation=conversation,
        uploaded_file=SimpleUploadedFile("p.png", image_bytes("PNG"), content_type="image/png"),
    )
    message = services.user_message_create(
        conversation=conversation, content=SECRET_TEXT, attachments=[attachment], run_id="r1"
    )
    summary = summary_save(
        conversation_id=conversation.id,
        summary=f"[Conversation summary]\n{SECRET_TEXT}",
        covers_through_id=message.pk,
        covered_count=1,
    )
    return {
        "conversation_id": str(conversation.id),
        "file_id": str(attachment.id),
        "message_id": str(message.pk),
        "summary_id": str(summary.pk),
        "project_id": str(project.pk),
        "object_id": str(conversation.pk),
        "id": str(user.pk),
    }


def _untouched(values: dict[str, str]) -> None:
    conversation = Conversation.objects.get(pk=values["conversation_id"])
    assert conversation.title == SECRET_TITLE
    assert Message.objects.filter(conversation=conversation, content=SECRET_TEXT).count() == 1
    assert not Message.objects.filter(conversation=conversation, pinned=True).exists()
    summary = ContextSummary.objects.get(pk=values["summary_id"])
    assert summary.content.endswith(SECRET_TEXT) and summary.discarded_at is None
    assert Attachment.objects.filter(pk=values["file_id"]).exists()
    project = Project.objects.get(pk=values["project_id"])
    assert (project.name, project.instructions) == (SECRET_TITLE, SECRET_TEXT)
    assert conversation.project_id == project.pk


def _request(client: Client, method: str, url: str):
    return client.generic(method.upper(), url, "{}", content_type="application/json")


def test_the_enumeration_sees_every_app_route():
    """A sanity check of the walker itself, so the loops below cannot pass on an empty list."""
    names = {r.name for r in http_routes()}
    assert {"chat:conversations", "chat:attachment", "admin:index", "login"} <= names
    assert websocket_routes() == ["ws/chat/<uuid:conversation_id>/"]


@pytest.mark.parametrize("route", http_routes(), ids=lambda r: r.template)
def test_anonymous_visitors_are_refused_everywhere_but_the_public_pages(
    client, route, alices_things
):
    url = route.url(alices_things)
    for method in METHODS:
        response = _request(client, method, url)
        assert response.status_code < 500, (method, url)
        body = _body(response)
        assert SECRET_TITLE not in body and SECRET_TEXT not in body, (method, url)
        if route.name in PUBLIC:
            continue
        refused = response.status_code in (401, 403, 404, 405) or (
            response.status_code == 302 and "login" in response["Location"]
        )
        assert refused, (method, url, response.status_code)
    _untouched(alices_things)


def _body(response) -> str:
    """The response's text, streamed (a file, the favicon) or not."""
    raw = b"".join(response.streaming_content) if response.streaming else response.content
    return raw.decode(errors="replace")


def _is_async(route) -> bool:
    return inspect.iscoroutinefunction(route.callback)


@pytest.mark.parametrize(
    "route",
    [r for r in http_routes() if r.name not in PUBLIC and not _is_async(r)],
    ids=lambda r: r.template,
)
def test_another_user_cannot_see_or_change_alices_things(other_user, route, alices_things):
    """Mallory is logged in but is not staff and owns nothing of Alice's."""
    _mallory_is_refused(other_user, route, alices_things)


# An async view reads the database from other threads (Channels' database_sync_to_async
# closes the connections it finds): those routes run on a committed database.
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "route",
    [r for r in http_routes() if r.name not in PUBLIC and _is_async(r)],
    ids=lambda r: r.template,
)
def test_another_user_cannot_see_or_change_alices_things_async(other_user, route, alices_things):
    """As above, for the async views."""
    _mallory_is_refused(other_user, route, alices_things)


def _mallory_is_refused(other_user, route, alices_things) -> None:
    client = Client()  # CSRF is not what is tested here: the owner check must stand alone
    client.force_login(other_user)
    url = route.url(alices_things)
    for method in METHODS:
        response = _request(client, method, url)
        assert response.status_code < 500, (method, url)
        body = _body(response)
        assert SECRET_TITLE not in body and SECRET_TEXT not in body, (method, url)
        if route.name in OWN_PAGES:
            continue  # about her own account or conversations: nothing of Alice's (above)
        if any(p in route.params for p in ("conversation_id", "file_id", "project_id")):
            assert response.status_code in (404, 405), (method, url, response.status_code)
        elif route.name and route.name.startswith("admin:") or route.template.startswith("admin/"):
            assert response.status_code == 302 and "/admin/login/" in response["Location"]
        else:
            raise AssertionError(f"unclassified route {route.template}: decide who may use it")
    _untouched(alices_things)


def test_search_never_finds_another_users_words(user, other_user, alices_things):
    alice = Client()
    alice.force_login(user)
    assert alice.get("/api/search/", {"q": "vault code 4242"}).json()["results"]
    client = Client()
    client.force_login(other_user)
    for query in ("vault code 4242", "Alice's secret plans", "secret"):
        response = client.get("/api/search/", {"q": query})
        assert response.status_code == 200 and response.json()["results"] == [], query


def test_an_unknown_id_and_a_foreign_id_answer_alike(other_user, alices_things):
    """404 bodies do not tell "exists, not yours" from "does not exist" (DESIGN §4)."""
    import uuid

    client = Client()
    client.force_login(other_user)
    for route in http_routes():
        if not any(p in route.params for p in ("conversation_id", "file_id", "project_id")):
            continue
        foreign = client.get(route.url(alices_things))
        unknown_values = dict(alices_things, conversation_id=str(uuid.uuid4()))
        unknown_values["file_id"] = str(uuid.uuid4())
        unknown_values["project_id"] = str(Project.objects.order_by("pk").last().pk + 1)
        unknown = client.get(route.url(unknown_values))
        assert (foreign.status_code, foreign.content) == (unknown.status_code, unknown.content)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("template", websocket_routes())
async def test_every_socket_route_refuses_anonymous_and_foreign_users(
    template, other_user, alices_things
):
    """Through the deployed ASGI stack (origin check + session auth)."""
    from config.asgi import application

    path = websocket_path(template, alices_things)
    mallory = Client()
    await sync_to_async(mallory.force_login)(other_user)
    cookie = f"sessionid={mallory.cookies['sessionid'].value}".encode()
    for headers, code in (
        ([(b"origin", b"http://127.0.0.1")], 4401),
        ([(b"origin", b"http://127.0.0.1"), (b"cookie", cookie)], 4404),
    ):
        comm = WebsocketCommunicator(application, path, headers=headers)
        connected, _ = await comm.connect(timeout=10)
        assert connected
        assert await comm.receive_output(timeout=10) == {"type": "websocket.close", "code": code}
        await comm.disconnect()
    count = await Message.objects.filter(conversation_id=alices_things["conversation_id"]).acount()
    assert count == 1
