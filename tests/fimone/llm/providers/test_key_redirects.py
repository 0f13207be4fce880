"""A model's key is not sent on when its endpoint redirects a call to another host: the SDK's
HTTP client drops ``Authorization`` when a redirect leaves the origin (docs/operations.md,
"Secrets and the key allow-list"); a redirect on the same host keeps it."""

from __future__ import annotations

from contextmgmt.core.messages import ChatMessage
from fimone.llm.providers.openai_client import OpenAIChatLLM
from tests.support.recording_server import json_answer, recording_server, redirect_answer

COMPLETION = {
    "id": "c1",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}
PATH = "/v1/chat/completions"


async def ask(base_url: str) -> str:
    llm = OpenAIChatLLM(model="m", base_url=base_url, api_key="sk-row-key", max_retries=0)
    try:
        result = await llm.chat([ChatMessage(role="user", content="hi", pinned=True)])
    finally:
        await llm.aclose()
    return result.message.content


async def test_a_redirect_to_another_host_gets_no_key():
    with recording_server({PATH: json_answer(COMPLETION)}) as other:
        routes = {PATH: redirect_answer(other.url(PATH), status=307)}
        with recording_server(routes) as endpoint:
            assert await ask(endpoint.url("/v1")) == "ok"
    assert endpoint.headers_for(PATH)[0]["authorization"] == "Bearer sk-row-key"
    assert "authorization" not in other.headers_for(PATH)[0]


async def test_a_redirect_on_the_same_host_keeps_the_key():
    routes = {PATH: redirect_answer("/v2/chat/completions", status=307)}
    routes["/v2/chat/completions"] = json_answer(COMPLETION)
    with recording_server(routes) as endpoint:
        assert await ask(endpoint.url("/v1")) == "ok"
    assert endpoint.headers_for("/v2/chat/completions")[0]["authorization"] == ("Bearer sk-row-key")
