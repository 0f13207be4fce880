"""Hostile text through the websocket and the JSON API.

Hypothesis generates websocket frames and HTTP bodies: arbitrary JSON (NUL bytes, lone
surrogates written as JSON escapes — the only way they can cross the wire — deep nesting,
huge numbers), arbitrary text that is not JSON, and near-valid ``message`` frames. For every
one: never a 500 or a crashed socket, and nothing partial stored — a refused input changes
nothing, an accepted one leaves a finished run (query and answer, nothing ``running``).
Then the fixed cases: NUL bytes, lone surrogates and 1 MB of emoji in messages and titles.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chat import services
from chat.models import Conversation, Message
from chat.runs.registry import registry
from tests.support.runs import connect, events_until, next_event

HYPOTHESIS = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# Any code point, surrogates and NUL included (json.dumps escapes them as \ud800, \u0000).
ANY_CHAR = st.characters(codec=None, exclude_categories=())
NASTY_TEXT = st.text(ANY_CHAR, max_size=40) | st.sampled_from(
    ["\ud800", "a\x00b", "\udfff\ud800", "\x00", " ", "\u202e\u200b", "😀" * 5]
)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | NASTY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(NASTY_TEXT, inner, max_size=4),
    max_leaves=12,
)
MESSAGE_FRAMES = st.fixed_dictionaries(
    {"type": st.sampled_from(["message", "cancel", "MESSAGE", "", "message\x00"])},
    optional={
        "content": NASTY_TEXT | JSON_VALUES,
        "attachments": st.lists(NASTY_TEXT, max_size=3) | JSON_VALUES,
        "mode": st.sampled_from(["react", "dag", "DAG", "\ud800"]) | JSON_VALUES,
    },
)
# Messages that are valid but for their text: these start runs (or are refused for it).
TEXT_MESSAGES = st.fixed_dictionaries(
    {"type": st.just("message"), "content": NASTY_TEXT},
    optional={"mode": st.sampled_from(["react", "dag"]), "attachments": st.just([])},
)
FRAMES = (
    TEXT_MESSAGES.map(json.dumps)
    | MESSAGE_FRAMES.map(json.dumps)
    | JSON_VALUES.map(json.dumps)
    | st.text(st.characters(codec="utf-8"), max_size=60)  # mostly not JSON at all
)
UNSTORABLE = [
    "\ud800",
    "lone \udc00 low",
    "nul \x00 byte",
    "a pair \udbff\udfff then a lone \ud83d",
]


def _counts(conversation) -> tuple[int, int]:
    rows = Message.objects.filter(conversation=conversation)
    return rows.count(), rows.filter(status__in=["running", "pending"]).count()


@pytest.mark.django_db(transaction=True)
def test_hypothesis_websocket_frames_never_crash_or_store_half(user, ws_fake_llm):
    ws_fake_llm.default = "fine"
    conversation = services.conversation_create(owner=user, title="frames")

    async def exchange(frame: str) -> list[dict]:
        await get_channel_layer().flush()
        comm = await connect(user, conversation.id)
        try:
            # send_input, not send_to: an empty text frame is legal on the wire.
            await comm.send_input({"type": "websocket.receive", "text": frame})
            first = await next_event(comm)
            events = [first]
            if first["type"] == "run.started":
                events += await events_until(comm, "done", "error")
            await registry.wait_idle()
            # The socket is still usable: a cancel without a run gets its error.
            await comm.send_json_to({"type": "cancel"})
            assert (await next_event(comm))["code"] == "no_active_run"
            return events
        finally:
            await comm.disconnect()

    @HYPOTHESIS
    @given(frame=FRAMES)
    def check(frame):
        before, _ = _counts(conversation)
        events = async_to_sync(exchange)(frame)
        after, unfinished = _counts(conversation)
        outcomes[events[0]["type"] + ":" + str(events[0].get("code"))] += 1
        assert unfinished == 0
        if events[0]["type"] == "error":
            assert events[0]["code"] and events[0]["message"]
            assert after == before  # refused: nothing stored
        else:
            assert events[0]["type"] == "run.started"
            assert events[-1]["type"] in ("done", "error")
            assert after == before + 2  # the query and its finished answer

    outcomes: Counter[str] = Counter()
    check()
    # Both kinds of example really happened: refused frames and runs that started.
    assert (
        outcomes["run.started:None"] > 0 and sum(outcomes.values()) > outcomes["run.started:None"]
    )
    print(dict(outcomes))


@pytest.mark.django_db
def test_hypothesis_http_bodies_never_500_or_store_half(user):
    client = Client()
    client.force_login(user)
    mine = services.conversation_create(owner=user, title="keep me")

    @HYPOTHESIS
    @given(
        body=st.one_of(
            st.fixed_dictionaries(
                {}, optional={"title": NASTY_TEXT | JSON_VALUES, "mode": NASTY_TEXT | JSON_VALUES}
            ).map(json.dumps),
            JSON_VALUES.map(json.dumps),
        ).map(str.encode)
        | st.binary(max_size=200),
        method=st.sampled_from(["POST", "PATCH"]),
    )
    def check(body, method):
        before = list(Conversation.objects.values_list("id", "title", "mode").order_by("id"))
        url = "/api/conversations/" if method == "POST" else f"/api/conversations/{mine.id}/"
        response = client.generic(method, url, body, content_type="application/json")
        assert response.status_code < 500, response.content
        statuses[response.status_code] += 1
        answer = response.json()
        after = list(Conversation.objects.values_list("id", "title", "mode").order_by("id"))
        if response.status_code >= 400:
            assert answer["error"]["code"] and answer["error"]["message"]
            assert after == before
        else:
            stored = Conversation.objects.get(pk=answer["id"])
            assert (stored.title, stored.mode) == (answer["title"], answer["mode"])
            stored.title.encode("utf-8")  # storable text, no lone surrogates
            assert "\x00" not in stored.title

    statuses: Counter[int] = Counter()
    check()
    assert statuses[400] and (statuses[200] or statuses[201]), statuses


# --- fixed hostile strings ---------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("text", UNSTORABLE)
def test_titles_with_nul_or_lone_surrogates_are_a_clear_400(user, text):
    client = Client()
    client.force_login(user)
    conversation = services.conversation_create(owner=user, title="before")
    body = json.dumps({"title": text})  # escapes: \ud800, \u0000
    created = client.post("/api/conversations/", body, content_type="application/json")
    patched = client.patch(
        f"/api/conversations/{conversation.id}/", body, content_type="application/json"
    )
    for response in (created, patched):
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "invalid_text"
    assert list(Conversation.objects.values_list("title", flat=True)) == ["before"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("clean_runs")
@pytest.mark.parametrize("text", UNSTORABLE)
async def test_messages_with_nul_or_lone_surrogates_get_an_error_and_store_nothing(
    user, ws_fake_llm, text
):
    from asgiref.sync import sync_to_async

    ws_fake_llm.default = "fine"
    conversation = await sync_to_async(services.conversation_create)(owner=user, title="t")
    comm = await connect(user, conversation.id)
    try:
        await comm.send_to(text_data=json.dumps({"type": "message", "content": text}))
        event = await next_event(comm)
        assert event["type"] == "error" and event["code"] == "invalid_text", event
        assert await Message.objects.filter(conversation=conversation).acount() == 0
        # Still usable, and a normal message runs.
        await comm.send_json_to({"type": "message", "content": "normal text"})
        assert (await events_until(comm, "done", "error"))[-1]["type"] == "done"
    finally:
        await comm.disconnect()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("clean_runs")
async def test_a_megabyte_of_emoji_is_refused_as_too_long_and_the_socket_lives(user, ws_fake_llm):
    from asgiref.sync import sync_to_async

    ws_fake_llm.default = "fine"
    conversation = await sync_to_async(services.conversation_create)(owner=user, title="t")
    emoji = "😀" * 262_144  # 1 MiB of UTF-8
    comm = await connect(user, conversation.id)
    try:
        await comm.send_json_to({"type": "message", "content": emoji})
        event = await next_event(comm)
        assert (event["type"], event["code"]) == ("error", "content_too_long")
        assert await Message.objects.filter(conversation=conversation).acount() == 0
        # Just under the limit is a normal message, emoji and all.
        from django.conf import settings as django_settings

        fits = "😀" * django_settings.FIMONE_WS_MAX_CONTENT_CHARS
        await comm.send_json_to({"type": "message", "content": fits})
        assert (await events_until(comm, "done", "error"))[-1]["type"] == "done"
        query = await Message.objects.filter(conversation=conversation, role="user").aget()
        assert query.content == fits
    finally:
        await comm.disconnect()


@pytest.mark.django_db
def test_a_megabyte_of_emoji_as_a_title_is_refused_and_at_the_limit_kept(user):
    client = Client()
    client.force_login(user)
    huge = client.post(
        "/api/conversations/", json.dumps({"title": "😀" * 262_144}),
        content_type="application/json",
    )  # fmt: skip
    assert huge.status_code in (400, 413)
    assert not Conversation.objects.exists()
    limit = services.TITLE_MAX_CHARS
    ok = client.post(
        "/api/conversations/", json.dumps({"title": "😀" * limit}), content_type="application/json"
    )
    assert ok.status_code == 201
    assert Conversation.objects.get().title == "😀" * limit


@pytest.mark.django_db
def test_hypothesis_query_strings_never_500(user):
    """The messages API's paging parameters (before, after, limit) with anything at all."""
    client = Client()
    client.force_login(user)
    conversation = services.conversation_create(owner=user, title="paging")
    for i in range(3):
        services.user_message_create(conversation=conversation, content=f"m{i}", run_id=f"r{i}")
    url = f"/api/conversations/{conversation.id}/messages/"
    values = st.integers(min_value=-(2**70), max_value=2**70).map(str) | st.text(
        st.characters(codec="utf-8"), max_size=12
    )

    @HYPOTHESIS
    @given(params=st.dictionaries(st.sampled_from(["before", "after", "limit"]), values))
    def check(params):
        response = client.get(url, params)
        assert response.status_code in (200, 400), (params, response.content)
        statuses[response.status_code] += 1
        if response.status_code == 200:
            assert len(response.json()["messages"]) <= 3
        else:
            assert response.json()["error"]["code"]

    statuses: Counter[int] = Counter()
    check()
    assert statuses[200] and statuses[400], statuses
