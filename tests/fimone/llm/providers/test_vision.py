"""An endpoint that refuses images (a text-only model configured as able to see): the request
is sent again with each image as its description, and the endpoint is remembered."""

from __future__ import annotations

import itertools

import httpx2
import openai
import pytest

from contextmgmt.core.llm import LLMError
from contextmgmt.core.messages import IMAGE_NOTES, ChatMessage
from fimone.llm.providers.openai_client import OpenAIChatLLM
from fimone.llm.providers.vision import UNSEEN, says_no_images, without_pixels
from tests.support.scripted_server import http_error, text
from tests.support.vision import NOTE, PIXELS, image_parts, question_with_image

_models = itertools.count()


@pytest.fixture
def fresh_llm(scripted_server):
    """A client whose (endpoint, model) pair no earlier test has taught anything."""

    def make(**kw) -> OpenAIChatLLM:
        return OpenAIChatLLM(
            model=f"vision-test-{next(_models)}",
            base_url=scripted_server.base_url,
            api_key="k",
            max_retries=0,
            **kw,
        )

    return make


REFUSALS = [
    "Invalid content type. image_url is only supported by certain models.",  # OpenAI
    "Failed to deserialize the JSON body: unknown variant `image_url`, expected `text`",
    "Qwen2.5-7B-Instruct is not a multimodal model",  # vLLM
    "image input is not supported - hint: if this is unexpected, you may need --mmproj",
    "This model does not support images.",
]


@pytest.mark.parametrize("message", REFUSALS)
async def test_a_refused_image_is_sent_again_as_its_description(
    scripted_server, fresh_llm, message
):
    llm = fresh_llm()
    assert llm.supports_vision
    scripted_server.enqueue(http_error(400, message), text("42.10 EUR"))
    result = await llm.chat([question_with_image()])

    assert result.message.text() == "42.10 EUR"
    first, second = scripted_server.requests
    assert image_parts(first) == 1 and image_parts(second) == 0
    assert second["messages"][-1]["content"] == f"What is the total?\n{NOTE}"
    # Remembered: no more pixels to this endpoint, and runs prepare descriptions from now on.
    assert not llm.supports_vision
    scripted_server.reset()
    scripted_server.enqueue(text("Still 42.10 EUR"))
    await llm.chat([question_with_image()])
    [only] = scripted_server.requests
    assert image_parts(only) == 0


async def test_a_streamed_call_falls_back_the_same_way(scripted_server, fresh_llm):
    llm = fresh_llm()
    scripted_server.enqueue(http_error(400, REFUSALS[0]), text("42.10 EUR"))
    chunks = [c async for c in llm.stream_chat([question_with_image()])]

    assert "".join(c.text or "" for c in chunks) == "42.10 EUR"
    first, second = scripted_server.requests
    assert image_parts(first) == 1 and image_parts(second) == 0
    assert NOTE in second["messages"][-1]["content"]


async def test_another_refusal_is_not_taken_for_one_of_images(scripted_server, fresh_llm):
    llm = fresh_llm()
    scripted_server.enqueue(http_error(400, "temperature must be at most 2"))
    with pytest.raises(LLMError):
        await llm.chat([question_with_image()])
    assert len(scripted_server.requests) == 1
    assert llm.supports_vision


async def test_a_request_without_images_is_not_retried(scripted_server, fresh_llm):
    llm = fresh_llm()
    scripted_server.enqueue(http_error(400, REFUSALS[0]))
    with pytest.raises(LLMError):
        await llm.chat([ChatMessage(role="user", content="Hello")])
    assert len(scripted_server.requests) == 1
    assert llm.supports_vision


async def test_an_endpoint_that_refuses_even_the_text_fails_once_not_forever(
    scripted_server, fresh_llm
):
    llm = fresh_llm()
    scripted_server.enqueue(http_error(400, REFUSALS[0]), http_error(400, REFUSALS[0]))
    with pytest.raises(LLMError):
        await llm.chat([question_with_image()])
    assert len(scripted_server.requests) == 2


async def test_a_refusal_reported_to_the_configuration_is_not_kept_for_the_process(
    scripted_server, fresh_llm
):
    """A model configuration row keeps the refusal itself (the registry stores what the
    client reports), so an admin can reset it: the process remembers nothing."""
    reported: list[str] = []

    async def on_images_refused(message: str) -> None:
        reported.append(message)

    llm = fresh_llm(on_images_refused=on_images_refused)
    scripted_server.enqueue(http_error(400, REFUSALS[2]), text("42.10 EUR"))
    result = await llm.chat([question_with_image()])

    assert result.message.text() == "42.10 EUR"
    assert len(reported) == 1 and REFUSALS[2] in reported[0]
    assert not llm.supports_vision  # this object sends text for the rest of its run
    same_endpoint = OpenAIChatLLM(
        model=llm.model_name, base_url=llm.base_url, api_key="k", max_retries=0
    )
    assert same_endpoint.supports_vision


async def test_a_refusal_that_cannot_be_stored_still_gets_the_answer(scripted_server, fresh_llm):
    async def on_images_refused(message: str) -> None:
        raise RuntimeError("database is gone")

    llm = fresh_llm(on_images_refused=on_images_refused)
    scripted_server.enqueue(http_error(400, REFUSALS[0]), text("42.10 EUR"))
    chunks = [c async for c in llm.stream_chat([question_with_image()])]
    assert "".join(c.text or "" for c in chunks) == "42.10 EUR"
    assert not llm.supports_vision


async def test_a_model_that_does_not_see_is_sent_descriptions_by_any_caller(
    scripted_server, fresh_llm
):
    """Callers read ``supports_vision`` and send no pixels to a model without it; one that
    did anyway does not cost a refused call."""
    llm = fresh_llm(supports_vision=False)
    scripted_server.enqueue(text("42.10 EUR"))
    await llm.chat([question_with_image()])
    [only] = scripted_server.requests
    assert image_parts(only) == 0 and NOTE in only["messages"][-1]["content"]


def test_without_pixels_uses_each_images_own_description_in_order():
    second = "[image: b.png, 10x10 — blue]"
    message = ChatMessage(
        role="user",
        content=[{"type": "text", "text": "Compare"}, PIXELS, PIXELS, PIXELS],
        metadata={IMAGE_NOTES: [NOTE, second]},
    )
    plain = ChatMessage(role="assistant", content="Sure.")
    out = without_pixels([message, plain])
    assert out[0].content == f"Compare\n{NOTE}\n{second}\n{UNSEEN}"
    assert out[1] is plain
    assert isinstance(message.content, list) and len(message.content) == 4  # not mutated


def test_refusal_wording_is_recognised_only_in_client_errors():
    def status_error(status: int, message: str) -> openai.APIStatusError:
        request = httpx2.Request("POST", "http://x/v1/chat/completions")
        response = httpx2.Response(status, request=request)
        return openai.APIStatusError(message, response=response, body=None)

    assert all(says_no_images(status_error(400, m)) for m in REFUSALS)
    assert says_no_images(status_error(422, REFUSALS[2]))
    assert not says_no_images(status_error(500, REFUSALS[0]))
    assert not says_no_images(status_error(400, "maximum context length is 8192 tokens"))
