"""The scripted server itself, in the ways other tests and benchmarks use it (issue 4)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from contextmgmt.core.llm import LLMUnavailable
from contextmgmt.core.messages import ChatMessage
from fimone.llm.providers.openai_client import OpenAIChatLLM
from tests.support.scripted_server import DEFAULT_TEXT, free_port, slow

REPO = Path(__file__).resolve().parents[3]


def post(base_url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_the_default_reply_answers_an_empty_queue(scripted_server):
    status, body = post(scripted_server.base_url, {"model": "m", "messages": []})
    assert status == 200
    assert body["choices"][0]["message"]["content"] == DEFAULT_TEXT


def test_without_a_default_an_unscripted_call_fails_loudly(scripted_server):
    scripted_server.default = None
    status, body = post(scripted_server.base_url, {"model": "m", "messages": []})
    assert status == 500 and "no reply queued" in body["error"]["message"]


def test_reset_empties_queue_and_log(scripted_server):
    scripted_server.enqueue("a", "b")
    post(scripted_server.base_url, {"messages": []})
    scripted_server.reset()
    assert scripted_server.queue == [] and scripted_server.requests == []


async def test_reset_aborts_a_sleeping_reply(scripted_server):
    """A slow reply left over by one test must not answer the next one."""
    import asyncio

    llm = OpenAIChatLLM(model="m", base_url=scripted_server.base_url, max_retries=0, timeout=5)
    scripted_server.enqueue(slow(30, "late"))
    pending = asyncio.create_task(llm.chat([ChatMessage(role="user", content="x")]))
    while not scripted_server.requests:  # noqa: ASYNC110 - state of another thread
        await asyncio.sleep(0.01)
    scripted_server.reset()
    with pytest.raises(LLMUnavailable):  # the server hung up instead of answering "late"
        await pending
    await llm.aclose()


def test_standalone_serves_the_default_reply_forever():
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.scripted_server",
            "--port",
            str(port),
            "--text",
            "bench reply",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert f"127.0.0.1:{port}/v1" in line
        for _ in range(3):
            status, body = post(f"http://127.0.0.1:{port}/v1", {"messages": [], "model": "x"})
            assert status == 200
            assert body["choices"][0]["message"]["content"] == "bench reply"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()
