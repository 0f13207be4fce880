"""A websocket speaks the user's interface language (chat/sockets/languages.py and
chat/sockets/consumer.py).

The same choice LocaleMiddleware makes for a page: the language switch's cookie, else
Accept-Language, else English.
"""

from __future__ import annotations

import pytest
from channels.testing import WebsocketCommunicator

from chat.sockets.languages import language_from_scope
from tests.support.runs import WAIT, answer_text, deployed_socket, events_until, next_event, send


def scope(cookies=None, accept=None) -> dict:
    headers = [(b"accept-language", accept.encode())] if accept else []
    return {"type": "websocket", "cookies": cookies or {}, "headers": headers}


@pytest.mark.parametrize(
    ("cookies", "accept", "language"),
    [
        ({}, "zh-CN,zh;q=0.9", "zh-hans"),
        ({}, "de-AT", "de"),
        ({}, "fr-FR,en;q=0.5", "en"),
        ({}, None, "en"),
        ({"django_language": "de"}, "zh-CN", "de"),  # the switch wins over the browser
        ({"django_language": "fr"}, "zh-CN", "zh-hans"),  # not offered: ignored
    ],
)
def test_language_from_scope(cookies, accept, language):
    assert language_from_scope(scope(cookies, accept)) == language


async def full_stack_socket(user, conversation, headers) -> WebsocketCommunicator:
    extra = dict(headers)
    cookies = extra.pop(b"cookie", b"").decode()
    comm = await deployed_socket(
        user, conversation.id, cookies=cookies, headers=tuple(extra.items())
    )
    connected, _ = await comm.connect(timeout=WAIT)
    assert connected
    return comm


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("clean_runs")
@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({b"accept-language": b"zh-CN,zh;q=0.9"}, "消息需要包含文字（或图片）。"),
        ({b"cookie": b"django_language=de"}, "Die Nachricht braucht etwas Text (oder ein Bild)."),
        ({}, "The message needs some text (or an image)."),
    ],
)
async def test_socket_errors_are_in_the_users_language(user, conversation, headers, expected):
    comm = await full_stack_socket(user, conversation, headers)
    await send(comm, type="message", content="   ")
    event = await next_event(comm)
    assert (event["code"], event["message"]) == ("content_missing", expected)
    await comm.disconnect()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("clean_runs")
@pytest.mark.parametrize(
    ("headers", "note"),
    [
        ({b"accept-language": b"zh-CN,zh;q=0.9"}, "（这是 fimone 的离线模型给出的回答"),
        ({b"cookie": b"django_language=de"}, "(Das hat fimones Offline-Modell beantwortet"),
    ],
)
async def test_the_offline_model_answers_in_the_sockets_language(
    user, conversation, settings, headers, note
):
    for name in ("LLM_BASE_URL", "LLM_MODEL", "FAST_LLM_BASE_URL", "FAST_LLM_MODEL"):
        setattr(settings, name, "")
    comm = await full_stack_socket(user, conversation, headers)
    await send(comm, type="message", content="12*7")
    done = await events_until(comm, "done", "error")
    assert done[-1]["type"] == "done", done[-1]
    answer = answer_text(done)
    assert "84" in answer and note in answer
    assert "offline model" not in answer
    await comm.disconnect()
