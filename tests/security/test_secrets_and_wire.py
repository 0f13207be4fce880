"""What leaves fimone: secrets never shown or logged, internal fields never sent.

Runs go through the real registry, the real ``openai`` SDK and the scripted
OpenAI-compatible server, so the server's request log is exactly what a provider receives.

- An ``LLM_API_KEY`` (and a key a ModelConfig row names through ``api_key_env``) reaches the
  provider's Authorization header and nowhere else: not a rendered page, not an API answer,
  not an admin page, not a websocket event, not the database, not a log line — including
  when the provider refuses the key (401) and with every logger at DEBUG.
- ``pinned``, ``injected`` and ``metadata`` (attachment ids, run ids, db ids) never reach
  the provider, through history loading, compaction, images and a mid-run follow-up.
"""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from chat import services
from chat.models import Message
from chat.runs.registry import registry as registry_of_runs
from contextmgmt.models import ModelConfig
from fimone.llm import registry
from tests.chat.images import image_bytes
from tests.support import scripted_server as scripted
from tests.support.runs import WAIT, connect, events_until, send, use_small_budget

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("clean_runs", "media_root"),
]

SECRET = "sk-live-" + "S3cr3tK3y" * 5
ROW_SECRET = "sk-row-" + "AnotherK3y" * 5
WIRE_KEYS = {"role", "content", "name", "tool_call_id", "tool_calls"}


@pytest.fixture
def provider(settings, scripted_server):
    """The scripted server as the configured provider, with a secret key."""
    settings.LLM_BASE_URL = scripted_server.base_url
    settings.LLM_API_KEY = SECRET
    settings.LLM_MODEL = "wire-model"
    settings.LLM_MAX_RETRIES = 0
    settings.LLM_TIMEOUT_SECONDS = 20
    registry._cache.clear()
    yield scripted_server
    registry._cache.clear()


def _conversation_with_history(user):
    conversation = services.conversation_create(owner=user, title="wire")
    for i in range(4):
        services.user_message_create(
            conversation=conversation, content=f"Turn {i}: " + "alpha beta 123 " * 250,
            run_id=f"old{i}",
        )  # fmt: skip
        reply = services.assistant_message_start(
            conversation=conversation, run_id=f"old{i}", mode="react"
        )
        services.assistant_message_finish(message=reply, content="gamma delta 456 " * 250)
    return conversation


async def test_internal_fields_never_reach_the_provider(user, provider, run_deps):
    use_small_budget(run_deps)
    # Slow enough that the follow-up arrives while the run is still calling the model.
    provider.default = scripted.slow(0.4, scripted.text("Noted."))
    conversation = await sync_to_async(_conversation_with_history)(user)
    attachment = await sync_to_async(services.attachment_create)(
        owner=user,
        conversation=conversation,
        uploaded_file=SimpleUploadedFile("c.png", image_bytes("PNG"), content_type="image/png"),
    )
    socket = await connect(user, conversation.id)
    try:
        await send(socket, type="message", content="Look at this", attachments=[str(attachment.id)])
        started = (await events_until(socket, "run.started"))[-1]
        await send(socket, type="message", content="FOLLOW-UP: and the colour?")
        await events_until(socket, "injected")
        assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"
        # A follow-up that came too late for the engine gets a run of its own: let it end.
        async with asyncio.timeout(WAIT):
            await registry_of_runs.wait_idle()
    finally:
        await socket.disconnect()
    socket = await connect(user, conversation.id)  # a fresh socket: no events left over
    try:
        await send(socket, type="message", content="Second turn, image now in history")
        assert (await events_until(socket, "done", "error"))[-1]["type"] == "done"
    finally:
        await socket.disconnect()

    bodies = list(provider.requests)
    assert bodies, "nothing reached the provider"
    run_ids = {started["run_id"]} | {
        m.run_id async for m in Message.objects.filter(conversation=conversation)
    }
    wire = json.dumps(bodies)
    for body in bodies:
        for message in body["messages"]:
            assert set(message) <= WIRE_KEYS, message.keys()
    for internal in ('"pinned"', '"injected"', '"metadata"', '"file_id"', str(attachment.id)):
        assert internal not in wire
    for run_id in run_ids - {None}:
        assert run_id not in wire
    # The test saw the paths it means to check: compaction, the image, the follow-up.
    assert any("context compactor" in json.dumps(b["messages"][0]) for b in bodies)
    assert "data:image/png;base64," in wire
    assert "FOLLOW-UP: and the colour?" in wire


def _pages(client: Client, admin: Client, conversation_id: str, row_id: int) -> dict[str, str]:
    urls = [
        "/",
        f"/c/{conversation_id}/",
        "/api/conversations/",
        f"/api/conversations/{conversation_id}/",
        f"/api/conversations/{conversation_id}/messages/",
        f"/api/conversations/{conversation_id}/context/",
    ]
    pages = {url: client.get(url) for url in urls}
    for url in (
        "/admin/",
        "/admin/contextmgmt/modelconfig/",
        "/admin/contextmgmt/modelconfig/add/",
        f"/admin/contextmgmt/modelconfig/{row_id}/change/",
        "/admin/chat/message/",
        "/admin/chat/conversation/",
    ):
        pages[url] = admin.get(url)
    for url, response in pages.items():
        assert response.status_code == 200, (url, response.status_code)
    return {url: r.content.decode() for url, r in pages.items()}


async def test_api_keys_never_appear_in_pages_events_database_or_logs(
    user, admin_user, provider, monkeypatch, caplog, capsys
):
    caplog.set_level(logging.DEBUG)  # every logger, the openai SDK and httpx included
    for name in ("openai", "httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    conversation = await sync_to_async(services.conversation_create)(owner=user, title="keys")
    provider.enqueue(
        scripted.text("All fine."),
        scripted.http_error(401, "Incorrect API key provided.", code="invalid_api_key"),
    )
    socket = await connect(user, conversation.id)
    try:
        await send(socket, type="message", content="hello")
        ok = await events_until(socket, "done", "error")
        await send(socket, type="message", content="again")
        refused = await events_until(socket, "done", "error")
    finally:
        await socket.disconnect()
    assert ok[-1]["type"] == "done"
    assert refused[-1]["type"] == "error" and refused[-1]["code"] == "llm_auth"
    # The key was really used: the provider got it, and only there.
    assert provider.request_headers[0]["authorization"] == f"Bearer {SECRET}"

    monkeypatch.setenv("FIMONE_WIRE_TEST_API_KEY", ROW_SECRET)
    row = await ModelConfig.objects.acreate(
        name="row", model="row-model", role="main", base_url=provider.base_url,
        api_key_env="FIMONE_WIRE_TEST_API_KEY", context_size=32_000, max_output_tokens=4_000,
    )  # fmt: skip
    registry._cache.clear()

    def render() -> dict[str, str]:
        client = Client()
        client.force_login(user)
        admin = Client()
        admin.force_login(admin_user)
        return _pages(client, admin, str(conversation.id), row.pk)

    pages = await sync_to_async(render)()
    stored = [
        json.dumps([m.content, m.metadata])
        async for m in Message.objects.filter(conversation=conversation)
    ]
    captured = capsys.readouterr()
    # The logs really hold the SDK's debug lines (request options, retries) of those calls.
    assert {r.name.split(".")[0] for r in caplog.records} >= {"openai"}
    haystacks = {
        "events": json.dumps(ok + refused),
        "database": "\n".join(stored),
        "logs": caplog.text,
        "stdout/stderr": captured.out + captured.err,
        **pages,
    }
    assert "FIMONE_WIRE_TEST_API_KEY" in pages[f"/admin/contextmgmt/modelconfig/{row.pk}/change/"]
    for where, text in haystacks.items():
        for secret in (SECRET, ROW_SECRET, SECRET[8:30], ROW_SECRET[7:30]):
            assert secret not in text, f"a key leaked into {where}"
