"""The chat websocket: who may connect, and every bad frame.

Bad frames get ``error {code, message}`` and the socket stays open: each test proves the
socket is still usable afterwards by getting an answer to a ``cancel`` frame.
"""

from __future__ import annotations

import json
import uuid

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.core.files.uploadedfile import SimpleUploadedFile

from chat import services
from chat.models import Message
from tests.chat.images import image_bytes
from tests.support.runs import WAIT, connect, deployed_socket, next_event, send

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clean_runs")]


async def assert_still_usable(comm: WebsocketCommunicator) -> None:
    """The socket answers another frame (here: a cancel with nothing to cancel)."""
    await send(comm, type="cancel")
    event = await next_event(comm)
    assert event == {"type": "error", "code": "no_active_run", "message": event["message"]}


async def assert_error(comm: WebsocketCommunicator, code: str) -> dict:
    event = await next_event(comm)
    assert event["type"] == "error"
    assert event["code"] == code
    assert event["message"]
    await assert_still_usable(comm)
    return event


# --- who may connect ----------------------------------------------------------------------


async def test_owner_connects_and_is_not_closed(user, conversation):
    comm = await connect(user, conversation.id)
    await assert_still_usable(comm)
    await comm.disconnect()


async def test_anonymous_socket_is_closed_with_4401(conversation):
    comm = await connect(None, conversation.id)
    assert await comm.receive_output(timeout=WAIT) == {"type": "websocket.close", "code": 4401}


async def test_foreign_conversation_is_closed_with_4404(user, foreign_conversation):
    comm = await connect(user, foreign_conversation.id)
    assert await comm.receive_output(timeout=WAIT) == {"type": "websocket.close", "code": 4404}


async def test_unknown_conversation_is_closed_exactly_like_a_foreign_one(user):
    comm = await connect(user, uuid.uuid4())
    assert await comm.receive_output(timeout=WAIT) == {"type": "websocket.close", "code": 4404}


async def test_full_stack_with_session_cookie_and_origin(user, conversation):
    """Through config.asgi: origin validation and session authentication as deployed."""
    comm = await deployed_socket(user, conversation.id)
    connected, _ = await comm.connect(timeout=WAIT)
    assert connected
    await assert_still_usable(comm)
    await comm.disconnect()


async def test_full_stack_without_session_is_closed_4401(conversation):
    from config.asgi import application

    comm = WebsocketCommunicator(
        application, f"/ws/chat/{conversation.id}/", headers=[(b"origin", b"http://127.0.0.1")]
    )
    connected, _ = await comm.connect(timeout=WAIT)
    assert connected
    assert await comm.receive_output(timeout=WAIT) == {"type": "websocket.close", "code": 4401}


async def test_foreign_origin_is_refused_at_the_handshake(user, conversation):
    comm = await deployed_socket(user, conversation.id, origin=b"https://evil.example")
    connected, _ = await comm.connect(timeout=WAIT)
    assert not connected


# --- bad frames --------------------------------------------------------------------------


async def test_invalid_json(socket):
    await socket.send_to(text_data="{not json")
    await assert_error(socket, "invalid_json")


async def test_binary_frame(socket):
    await socket.send_to(bytes_data=b'{"type": "cancel"}')
    await assert_error(socket, "invalid_json")


@pytest.mark.parametrize("frame", ["[1, 2]", '"message"', "42", "null"])
async def test_not_an_object(socket, frame):
    await socket.send_to(text_data=frame)
    await assert_error(socket, "not_object")


@pytest.mark.parametrize("frame", [{"type": "hello"}, {"content": "hi"}, {"type": None}])
async def test_unknown_type(socket, frame):
    await socket.send_json_to(frame)
    await assert_error(socket, "unknown_type")


@pytest.mark.parametrize("content", [None, "", "   \n", 42, ["hi"]])
async def test_content_missing(socket, content):
    frame = {"type": "message", "mode": "react"}
    if content is not None:
        frame["content"] = content
    await socket.send_json_to(frame)
    await assert_error(socket, "content_missing")


async def test_content_too_long_uses_the_setting(socket, settings):
    settings.FIMONE_WS_MAX_CONTENT_CHARS = 50
    await send(socket, type="message", content="x" * 51)
    event = await assert_error(socket, "content_too_long")
    assert "50" in event["message"]


async def test_content_at_the_limit_is_not_too_long(socket, settings):
    settings.FIMONE_WS_MAX_CONTENT_CHARS = 50
    # At the limit the length check passes and the next check (mode) answers.
    await send(socket, type="message", content="x" * 50, mode="sideways")
    await assert_error(socket, "bad_mode")


@pytest.mark.parametrize("mode", ["sideways", "", 3, "REACT"])
async def test_bad_mode(socket, mode):
    await send(socket, type="message", content="hi", mode=mode)
    await assert_error(socket, "bad_mode")


@pytest.mark.parametrize(
    "attachments",
    ["not-a-list", [1, 2], [{"file_id": "x"}], [str(uuid.uuid4())], ["not-a-uuid"]],
)
async def test_bad_attachment_shapes_and_unknown_ids(socket, attachments):
    await send(socket, type="message", content="look", attachments=attachments)
    await assert_error(socket, "bad_attachment")


async def test_too_many_attachments(socket):
    ids = [str(uuid.uuid4()) for _ in range(17)]
    await send(socket, type="message", content="look", attachments=ids)
    await assert_error(socket, "bad_attachment")


async def test_foreign_attachment_is_refused_and_nothing_is_persisted(
    socket, conversation, foreign_conversation, other_user
):
    upload = SimpleUploadedFile("x.png", image_bytes("PNG"), content_type="image/png")
    foreign = await sync_to_async(services.attachment_create)(
        owner=other_user, conversation=foreign_conversation, uploaded_file=upload
    )
    await send(socket, type="message", content="look", attachments=[str(foreign.id)])
    event = await assert_error(socket, "bad_attachment")
    assert "Mallory" not in event["message"]
    assert await Message.objects.filter(conversation=conversation).acount() == 0


async def test_rate_limit_refuses_frames_over_the_window(socket, settings):
    settings.FIMONE_WS_RATE_LIMIT = 3
    settings.FIMONE_WS_RATE_WINDOW_SECONDS = 3600.0
    for _ in range(3):
        await send(socket, type="cancel")
        assert (await next_event(socket))["code"] == "no_active_run"
    await send(socket, type="cancel")
    event = await next_event(socket)
    assert event["code"] == "rate_limited"
    assert "3" in event["message"]


async def test_rate_limit_window_slides(socket, settings, monkeypatch):
    settings.FIMONE_WS_RATE_LIMIT = 2
    settings.FIMONE_WS_RATE_WINDOW_SECONDS = 10.0
    clock = [1000.0]
    monkeypatch.setattr("chat.sockets.rate_limit.clock", lambda: clock[0])
    for _ in range(2):
        await send(socket, type="cancel")
        assert (await next_event(socket))["code"] == "no_active_run"
    await send(socket, type="cancel")
    assert (await next_event(socket))["code"] == "rate_limited"
    clock[0] += 10.0  # the window has passed: frames are welcome again
    await send(socket, type="cancel")
    assert (await next_event(socket))["code"] == "no_active_run"


async def test_rate_limit_is_per_user_so_another_socket_does_not_reset_it(
    user, conversation, socket, settings
):
    settings.FIMONE_WS_RATE_LIMIT = 3
    settings.FIMONE_WS_RATE_WINDOW_SECONDS = 3600.0
    for _ in range(2):
        await send(socket, type="cancel")
        assert (await next_event(socket))["code"] == "no_active_run"
    second = await connect(user, conversation.id)  # another socket (or a reconnect)
    await send(second, type="cancel")
    assert (await next_event(second))["code"] == "no_active_run"
    await send(second, type="cancel")
    assert (await next_event(second))["code"] == "rate_limited"
    await second.disconnect()


async def test_json_nested_past_the_limit_is_invalid_json_and_the_socket_lives(socket):
    await socket.send_to(text_data="[" * 1_100 + "]" * 1_100)
    await assert_error(socket, "invalid_json")
    await socket.send_to(text_data='{"type": "cancel", "x": ' + "[" * 40 + "]" * 40 + "}")
    await assert_error(socket, "invalid_json")


async def test_cancel_without_a_run(socket):
    await send(socket, type="cancel")
    event = await next_event(socket)
    assert event["type"] == "error" and event["code"] == "no_active_run"


async def test_conversation_deleted_while_connected(socket, conversation):
    await sync_to_async(services.conversation_delete)(conversation=conversation)
    await send(socket, type="message", content="anyone there?")
    event = await next_event(socket)
    assert event["code"] == "not_found"
    assert await socket.receive_output(timeout=WAIT) == {"type": "websocket.close", "code": 4404}


async def test_error_frames_are_plain_json_objects(socket):
    await socket.send_to(text_data="][")
    raw = await socket.receive_from(timeout=WAIT)
    assert json.loads(raw) == {
        "type": "error",
        "code": "invalid_json",
        "message": json.loads(raw)["message"],
    }


async def test_server_failure_taking_a_message_keeps_the_socket(socket, monkeypatch):
    from django.db import OperationalError

    from chat.runs import storage

    def locked(**kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(storage, "open_run", locked)
    await send(socket, type="message", content="hello")
    event = await assert_error(socket, "server_error")
    assert "locked" not in event["message"]
