"""Request bodies through a real daphne (not Django's test client, which skips Twisted):
no form body is parsed on the event loop, so a hostile body sent without a login does not
pause a streaming answer, and a broken multipart upload gets fimone's JSON error.

The server is fimone's (``config.server``, as ``bin/run`` and docs/operations.md start it);
plain ``daphne config.asgi:application``, the usual Channels command, is as safe.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import threading

import pytest

from tests.support.scripted_server import text
from tests.support.ws_client import streamed_gaps

pytestmark = pytest.mark.slow

# The largest pause between two deltas of an answer streamed every 50 ms that the test
# accepts while the bodies are sent: Twisted's parsing of them paused it for seconds.
LARGEST_GAP_SECONDS = 1.5


@pytest.fixture
def scripted_daphne(shared_daphne_factory, scripted_server):
    return shared_daphne_factory(
        env={"LLM_BASE_URL": scripted_server.base_url, "LLM_API_KEY": "k", "LLM_MODEL": "m"}
    )


def many_parts(count: int) -> tuple[bytes, str]:
    part = b'--B\r\nContent-Disposition: form-data; name="a"\r\n\r\nx\r\n'
    return part * count + b"--B--\r\n", "multipart/form-data; boundary=B"


def urlencoded(size: int) -> tuple[bytes, str]:
    pair = b"a=x&"
    return pair * (size // len(pair)), "application/x-www-form-urlencoded"


def post(server, path: str, body: bytes, content_type: str, *, logged_in: bool = False):
    """(status, content type, body) of a raw POST."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    headers = {"Content-Type": content_type, "Content-Length": str(len(body))}
    if logged_in:
        csrf = "c" * 32
        headers |= {
            "Cookie": f"sessionid={server.session_cookie}; csrftoken={csrf}",
            "X-CSRFToken": csrf,
            "Origin": server.origin,
            "Referer": server.base_url + "/",
        }
    try:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read()
    finally:
        connection.close()


def test_hostile_bodies_do_not_pause_a_streaming_answer(scripted_daphne, scripted_server):
    words = [f"w{i} " for i in range(240)]  # 240 deltas 50 ms apart: 12 s of answer
    scripted_server.enqueue(text("".join(words), chunk_delay=0.05))
    cid = scripted_daphne.api("POST", "/api/conversations/", {})["id"]
    started = threading.Event()
    answers: list[tuple[int, str, bytes]] = []

    def attack() -> None:
        started.wait(60)
        parts = many_parts(175_000)  # about 10 MB, within the documented nginx limit
        for body in (parts, urlencoded(4 * 1024 * 1024), parts):
            answers.append(post(scripted_daphne, "/healthz", *body))

    attacker = threading.Thread(target=attack)
    attacker.start()
    gaps = asyncio.run(streamed_gaps(scripted_daphne, cid, started))
    attacker.join(120)
    assert len(answers) == 3, "the bodies were not all answered while the answer streamed"
    # Django answered them (a JSON or HTML error of its own), not Twisted's empty 400.
    assert all(status in (403, 405) and body for status, _, body in answers), answers
    assert max(gaps) < LARGEST_GAP_SECONDS, f"largest pause {max(gaps):.2f} s"


def test_a_4_mb_urlencoded_body_is_the_json_413(scripted_daphne):
    cid = scripted_daphne.api("POST", "/api/conversations/", {})["id"]
    status, content_type, body = post(
        scripted_daphne,
        f"/api/conversations/{cid}/attachments/",
        *urlencoded(4 * 1024 * 1024),
        logged_in=True,
    )
    assert (status, content_type) == (413, "application/json")
    assert json.loads(body)["error"]["code"] == "body_too_large"


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"--x\r\nbroken\r\n", "multipart/form-data"),  # no boundary
        (b"--x\r\nbroken\r\n", "multipart/form-data; boundary=" + "x" * 250),  # too long
    ],
)
def test_a_broken_multipart_upload_is_the_json_invalid_multipart(
    scripted_daphne, body, content_type
):
    cid = scripted_daphne.api("POST", "/api/conversations/", {})["id"]
    status, answered_type, answer = post(
        scripted_daphne,
        f"/api/conversations/{cid}/attachments/",
        body,
        content_type,
        logged_in=True,
    )
    assert (status, answered_type) == (400, "application/json"), answer
    assert json.loads(answer)["error"]["code"] == "invalid_multipart"


def test_ro13_plain_daphne_parses_no_form_bodies_either(live_daphne_factory, scripted_server):
    """RO.13: the usual Channels command got Twisted's parsing (and its empty 400 for a
    broken multipart body); ``python -m config.server`` logged that it was plain daphne."""
    env = {"LLM_BASE_URL": scripted_server.base_url, "LLM_API_KEY": "k", "LLM_MODEL": "m"}
    for module in ("config.server", "daphne"):
        server = live_daphne_factory(env=env, server_module=module)
        cid = server.api("POST", "/api/conversations/", {})["id"]
        status, answered_type, answer = post(
            server,
            f"/api/conversations/{cid}/attachments/",
            b"--x\r\nbroken\r\n",
            "multipart/form-data",
            logged_in=True,
        )
        assert (status, answered_type) == (400, "application/json"), (module, answer)
        assert json.loads(answer)["error"]["code"] == "invalid_multipart"
        assert "plain daphne" not in server.log()
