"""Hostile websocket frames (RO.2): deep nesting never closes the socket, and reconnecting
or opening more sockets does not reset the rate limit (it counts per user)."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from chat import services
from tests.support.runs import connect, next_event, send

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clean_runs")]


@pytest.mark.parametrize("depth", [33, 1_100, 100_000])
@pytest.mark.parametrize("opener,closer", [("[", "]"), ('{"a":', "}")])
async def test_deep_json_is_an_invalid_json_frame_and_the_socket_lives(
    user, conversation, depth, opener, closer
):
    comm = await connect(user, conversation.id)
    try:
        await comm.send_to(text_data=opener * depth + "0" + closer * depth)
        event = await next_event(comm)
        assert (event["type"], event["code"]) == ("error", "invalid_json")
        await send(comm, type="cancel")
        assert (await next_event(comm))["code"] == "no_active_run"
    finally:
        await comm.disconnect()


async def test_new_sockets_do_not_reset_the_rate_limit(user, other_user, conversation, settings):
    settings.FIMONE_WS_RATE_LIMIT = 4
    settings.FIMONE_WS_RATE_WINDOW_SECONDS = 3600.0
    codes = []
    for _ in range(3):  # hammer, reconnect, hammer again
        comm = await connect(user, conversation.id)
        for _ in range(2):
            await send(comm, type="cancel")
            codes.append((await next_event(comm))["code"])
        await comm.disconnect()
    assert codes == ["no_active_run"] * 4 + ["rate_limited"] * 2
    # Another user is not throttled by Alice's frames.
    theirs = await sync_to_async(services.conversation_create)(owner=other_user, title="m")
    comm = await connect(other_user, theirs.id)
    await send(comm, type="cancel")
    assert (await next_event(comm))["code"] == "no_active_run"
    await comm.disconnect()
